{{- define "standin.image" -}}
{{ .Values.imageRegistry | default "upstream.invalid" }}/jetstack/cert-manager-controller:{{ .Chart.AppVersion }}
{{- end -}}
