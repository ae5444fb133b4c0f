//go:build tools

// Package tools pins the binaries this module builds (build_federation.py).
package tools

import (
	_ "github.com/karmada-io/karmada/cmd/controller-manager"
	_ "github.com/karmada-io/karmada/cmd/scheduler"
	_ "github.com/karmada-io/karmada/cmd/webhook"
	_ "github.com/karmada-io/karmada/cmd/aggregated-apiserver"
)
