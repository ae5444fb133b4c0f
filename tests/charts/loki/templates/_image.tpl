{{- define "standin.image" -}}
{{ (.Values.global.image.registry | default "upstream.invalid") }}/grafana/loki:{{ .Chart.AppVersion }}
{{- end -}}
