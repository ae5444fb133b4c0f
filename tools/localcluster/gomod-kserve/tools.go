//go:build tools

// Package tools pins the binary this module builds.
package tools

import (
	_ "github.com/kserve/kserve/cmd/manager"
)
