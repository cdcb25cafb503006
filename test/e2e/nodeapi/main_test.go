//go:build e2e

// Package nodeapie2e tests the node API end to end: the real microlet
// binary and plugins on a private containerd (the pressure suite's
// exported node harness), called over HTTPS as a client would (curl-like
// requests, client-go's remotecommand and port-forward over SPDY and
// WebSocket), and, for authentication and authorization, against a real
// kube-apiserver and etcd (internal/devcluster) with RBAC.
package nodeapie2e

import (
	"os"
	"testing"

	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

func TestMain(m *testing.M) {
	os.Exit(pressuree2e.Main(m))
}
