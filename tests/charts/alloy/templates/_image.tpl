{{- define "standin.image" -}}
{{ (.Values.global.image.registry | default "upstream.invalid") }}/grafana/alloy:{{ .Chart.AppVersion }}
{{- end -}}
