{{- define "standin.image" -}}
upstream.invalid/kserve/none:{{ .Chart.AppVersion }}
{{- end -}}
