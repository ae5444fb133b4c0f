//go:build tools

// Package tools pins the binaries this module builds.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
	_ "k8s.io/kube-state-metrics/v2"
)
