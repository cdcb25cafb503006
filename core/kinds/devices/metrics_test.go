package devices

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The kubelet's device plugin metrics: a resource counts as registered when
// a plugin starts offering it, again after its plugin was removed and came
// back, and again for the core restarted on the checkpoint; a plugin's
// later reports do not count. Each Allocate is timed.
func TestDevicePluginMetrics(t *testing.T) {
	root := t.TempDir()
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	slot := serve(t, "gpu", plugin)
	configured := &slots{list: []Slot{slot}}
	newManager := func() (*Manager, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		m, err := New(Options{Plugins: configured.get, RootDir: root, Registerer: reg,
			Logger: hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug})})
		if err != nil {
			t.Fatal(err)
		}
		return m, reg
	}
	registrations := func(m *Manager) float64 {
		return testutil.ToFloat64(m.metrics.registrations.WithLabelValues(gpu))
	}

	m, reg := newManager()
	run(t, m)
	offers(t, m, gpu, 2, 2)
	plugin.offer(devices(gpu, "a", "b", "c"))
	offers(t, m, gpu, 3, 3)
	if got := registrations(m); got != 1 {
		t.Errorf("registrations after the first offer and an update: %v, want 1", got)
	}

	configured.set()
	offers(t, m, gpu, 3, 0)
	configured.set(slot)
	offers(t, m, gpu, 3, 3)
	if got := registrations(m); got != 2 {
		t.Errorf("registrations after the plugin was removed and came back: %v, want 2", got)
	}

	if got := m.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil); !got.Admit {
		t.Fatal(got)
	}
	if n := testutil.CollectAndCount(reg, "kubelet_device_plugin_alloc_duration_seconds"); n != 1 {
		t.Errorf("alloc duration series: %d, want 1 (example.com/gpu)", n)
	}

	restarted, _ := newManager()
	run(t, restarted)
	offers(t, restarted, gpu, 3, 3)
	if got := registrations(restarted); got != 1 {
		t.Errorf("registrations of the restarted core: %v, want 1", got)
	}
}
