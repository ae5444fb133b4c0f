{{- define "standin.image" -}}
{{ .Values.basic.image_registry }}/{{ .Values.basic.scheduler_image_name }}:{{ .Values.basic.image_tag_version }}
{{- end -}}
