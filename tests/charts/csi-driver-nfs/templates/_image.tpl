{{- define "standin.image" -}}
{{ .Values.image.baseRepo }}/sig-storage/nfsplugin:v{{ .Chart.AppVersion }}
{{- end -}}
