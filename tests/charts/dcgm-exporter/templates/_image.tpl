{{- define "standin.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
