{{- define "standin.image" -}}
{{ .Values.nodeplugin.plugin.image.repository }}:v{{ .Chart.AppVersion }}
{{- end -}}
