//go:build tools

// Package tools pins the versions of the code generators used by `make generate`.
// This module is deliberately kept out of go.work: build its tools with GOWORK=off.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
