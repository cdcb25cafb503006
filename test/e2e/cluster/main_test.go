//go:build e2e

// Package clustere2e tests microlet as a node of a real cluster: one
// control plane for the whole package (internal/devcluster: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, set up as
// kubeadm does), and, per test, microlet nodes on private containerds
// (the pressure suite's node harness) joined to it. Tests run in parallel
// and tell their nodes apart by name; they read the cluster with client-go
// (controlPlane.Admin) or with kubectl, as a user would.
package clustere2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/prereq"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// nodeMonitorGracePeriod is how long a silent node stays Ready in the
// node lifecycle controller's eyes: upstream's 50 s, shortened so that a
// NotReady test is short.
const nodeMonitorGracePeriod = 20 * time.Second

var (
	// controlPlane is the package's cluster, set by TestMain.
	controlPlane *devcluster.Cluster
	// controlPlaneErr is why there is none.
	controlPlaneErr error
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	c, err := devcluster.Start(context.Background(), devcluster.Options{
		Controllers:            true,
		NodeMonitorGracePeriod: nodeMonitorGracePeriod,
	})
	if err != nil && !errors.Is(err, devcluster.ErrPrerequisites) {
		fmt.Fprintf(os.Stderr, "control plane: %v\n", err)
		return 1
	}
	controlPlane, controlPlaneErr = c, err
	code := pressuree2e.Main(m)
	if c != nil && code != 0 {
		c.LogTails(os.Stderr)
	}
	if c != nil {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "control plane: close: %v\n", err)
			code = 1
		}
	}
	return code
}

// cluster is the package's control plane; without one the test skips,
// or fails under CI, where every prerequisite must be there.
func cluster(t testing.TB) *devcluster.Cluster {
	t.Helper()
	if controlPlaneErr != nil {
		prereq.Missing(t, "control plane: %v", controlPlaneErr)
	}
	return controlPlane
}
