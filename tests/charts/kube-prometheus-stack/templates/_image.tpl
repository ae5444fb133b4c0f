{{- define "standin.image" -}}
{{ .Values.global.imageRegistry | default "upstream.invalid" }}/prometheus-operator/prometheus-operator:{{ .Chart.AppVersion }}
{{- end -}}
