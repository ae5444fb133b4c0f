{{- define "standin.image" -}}
{{ .Values.kserve.controller.image }}:{{ .Chart.AppVersion }}
{{- end -}}
