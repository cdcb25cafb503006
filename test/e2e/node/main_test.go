//go:build e2e

// Package nodee2e runs the real microlet binary, with its real plugins,
// against a private containerd (internal/devnode) and checks what the node
// does with real pods: static pods coming and going, restart policies and
// backoff, init and sidecar order, hooks, grace periods, restarts of the
// core and of the runtime, plugins on the real binary, cgroups and probes.
// docs/testing.md describes the harness.
package nodee2e

import (
	"os"
	"testing"

	"github.com/microlet/microlet/internal/e2e"
)

// binDir holds microlet and every plugin binary (see e2e.Main).
var binDir string

func TestMain(m *testing.M) {
	os.Exit(e2e.Main(m, &binDir))
}
