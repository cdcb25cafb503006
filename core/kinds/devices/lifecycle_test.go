package devices

import (
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A plugin removed from the config leaves its resource unhealthy, its
// capacity kept, for the grace period; then the resource is dropped and
// pods asking for it are refused.
func TestRemovedPluginGracePeriod(t *testing.T) {
	configured := &slots{list: []Slot{serve(t, "gpu", newFakePlugin(devices(gpu, "a", "b")))}}
	m := newManager(t, t.TempDir(), configured)
	clock := &fakeClock{now: time.Now()}
	m.now = clock.Now
	run(t, m)
	offers(t, m, gpu, 2, 2)

	configured.set()
	offers(t, m, gpu, 2, 0)
	refused := m.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil)
	if refused.Admit || refused.Retry || refused.Message != "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/gpu, which is unexpected" {
		t.Errorf("Admit during the grace period = %+v", refused)
	}

	clock.advance(EndpointStopGracePeriod + time.Second)
	eventually(t, "the resource dropped after the grace period", func() bool {
		_, known := m.Capacity()[v1.ResourceName(gpu)]
		return !known
	})
	if got := m.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil); got.Message != "Allocate failed due to cannot allocate unregistered device example.com/gpu, which is unexpected" {
		t.Errorf("Admit after the grace period = %+v", got)
	}
}

// A plugin that no longer lists a resource withdraws it at once.
func TestWithdrawnResource(t *testing.T) {
	plugin := newFakePlugin(devices(gpu, "a"), devices("example.com/fpga", "f"))
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, "example.com/fpga", 1, 1)
	plugin.offer(devices(gpu, "a"))
	eventually(t, "the fpga withdrawn", func() bool {
		_, known := m.Capacity()["example.com/fpga"]
		return !known
	})
}

// Invalid resources a plugin reports are ignored; the valid ones count.
func TestInvalidResourcesIgnored(t *testing.T) {
	duplicate := devices("example.com/dup", "d", "d")
	plugin := newFakePlugin(devices("cpu", "0"), devices("kubernetes.io/x", "0"), duplicate, devices(gpu, "a", ""), devices("example.com/ok", "1"))
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, "example.com/ok", 1, 1)
	for _, name := range []v1.ResourceName{"cpu", "kubernetes.io/x", "example.com/dup", gpu} {
		if _, known := m.Capacity()[name]; known {
			t.Errorf("the invalid resource %s is offered", name)
		}
	}
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
