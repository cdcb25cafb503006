//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/privatebus"
)

// TestShutdownNodeNotReady: when logind announces the machine's shutdown,
// the Node turns NotReady at once with the kubelet's reason and message
// (KubeletNotReady, "node is shutting down") and gets the Shutdown event;
// the inhibitor lock is released once the (here: no) pods are stopped; a
// cancelled shutdown makes the Node Ready again. This machine has no
// systemd: logind is the stand-in of internal/privatebus on a private
// dbus-daemon (docs/shutdown.md).
func TestShutdownNodeNotReady(t *testing.T) {
	t.Parallel()
	bus := privatebus.Start(t)
	logind := privatebus.StartLogind(t, bus, privatebus.LogindOptions{Delay: time.Minute, ConfDir: t.TempDir()})
	n := startNode(t, nodeOptions{
		Env:      []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus.Address},
		Settings: map[string]string{"shutdown_grace_period": `"4s"`, "shutdown_grace_period_critical_pods": `"2s"`},
	})
	waitReady(t, n, "")
	logind.Expect("held 1", time.Minute)

	logind.Send("prepare true")
	n.Eventually("the Node NotReady for the shutdown", func() (bool, string) {
		node, err := cluster(t).Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := readyCondition(node)
		return c.Status == v1.ConditionFalse && c.Reason == "KubeletNotReady" && c.Message == "node is shutting down", fmt.Sprintf("%+v", c)
	})
	logind.Expect("released 1", time.Minute)
	waitForReasons(t, n, "the node's Shutdown event", func() []v1.Event {
		return listEvents(t, "default", "involvedObject.kind=Node,involvedObject.name="+n.Name)
	}, "Shutdown")

	from := len(logind.Lines())
	logind.Send("prepare false")
	if _, ok := logind.Wait("held 2", from, time.Minute); !ok {
		t.Errorf("no new inhibitor lock after the cancelled shutdown: %q", logind.Lines())
	}
	waitReady(t, n, "")
}
