//go:build e2e

package pluginhoste2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/e2e"
)

func TestBinaryReplacedUnderLoadIsSwapped(t *testing.T) {
	var seen events
	host, dir := serving(t, pluginhost.Options{WatchDir: true, OnEvent: seen.record}, evictionAlpha)
	slot := host.Plugin("eviction")
	v1 := mustStatus(t, host, "eviction", "alpha")

	loop := startCallLoop(slot, 0)
	loop.waitOK(t, 50)
	Install(t, bins.PluginV2, dir, "microlet-eviction-alpha")
	v2 := servedByAnotherProcess(t, host, "eviction", v1.PID)
	loop.waitOK(t, 50)
	failures, versions := loop.end()

	if len(failures) != 0 {
		t.Errorf("%d calls failed during the swap, want none; first: %v", len(failures), failures[0])
	}
	if v1.PluginVersion != "1.0.0" || v2.PluginVersion != "2.0.0" || v2.Swaps != 1 {
		t.Errorf("before %+v, after %+v: want version 1.0.0 then 2.0.0 and one swap", v1, v2)
	}
	if versions["1.0.0"] == 0 || versions["2.0.0"] == 0 {
		t.Errorf("calls were answered by versions %v, want both", versions)
	}
	Eventually(t, 10*time.Second, "the retired process is gone", func() bool { return e2e.ProcessGone(v1.PID) })

	t.Run("to a binary that fails to configure keeps the old process", func(t *testing.T) {
		Install(t, bins.PluginRefusing, dir, "microlet-eviction-alpha")
		Eventually(t, 10*time.Second, "a swap-failed event", func() bool { return seen.count(pluginhost.EventSwapFailed) > 0 })
		st := mustStatus(t, host, "eviction", "alpha")
		if st.State != pluginhost.Serving || st.PID != v2.PID || st.PluginVersion != "2.0.0" {
			t.Errorf("after a failed swap: %+v, want pid %d still serving version 2.0.0", st, v2.PID)
		}
		if !strings.Contains(st.LastError, "refuses every config") {
			t.Errorf("last error %q does not give the plugin's reason", st.LastError)
		}
		if _, err := GetIdentity(context.Background(), slot); err != nil {
			t.Errorf("call after a failed swap: %v", err)
		}
	})
}

func TestSingletonSwitchesByName(t *testing.T) {
	host, dir := serving(t, pluginhost.Options{}, evictionAlpha)
	Install(t, bins.PluginV2, dir, "microlet-eviction-beta")
	alpha := mustStatus(t, host, "eviction", "alpha")
	slot := host.Plugin("eviction")

	if err := host.Reconcile(context.Background(), []pluginhost.Spec{{Kind: "eviction", Name: "beta"}}); err != nil {
		t.Fatal(err)
	}
	if host.Plugin("eviction") != slot || slot.Name() != "beta" {
		t.Errorf("the eviction slot is %p named %q, want the same slot %p named beta", host.Plugin("eviction"), slot.Name(), slot)
	}
	st := slot.Status()
	if st.State != pluginhost.Serving || st.Swaps != 1 || st.PluginVersion != "2.0.0" {
		t.Errorf("status %+v, want beta 2.0.0 serving after one swap", st)
	}
	id, err := GetIdentity(context.Background(), slot)
	if err != nil || id.GetName() != "beta" {
		t.Errorf("the slot answers %v, %v; want beta", id, err)
	}
	Eventually(t, 10*time.Second, "alpha is gone", func() bool { return e2e.ProcessGone(alpha.PID) })
}

func TestDevicesHaveOneSlotPerName(t *testing.T) {
	gpuA := pluginhost.Spec{Kind: "devices", Name: "gpu-a"}
	gpuB := pluginhost.Spec{Kind: "devices", Name: "gpu-b"}
	host, _ := serving(t, pluginhost.Options{}, gpuA, gpuB)
	if host.Plugin("devices") != nil {
		t.Errorf("Plugin(devices) is not nil: devices is not a singleton kind")
	}
	before := host.Plugins("devices")
	if len(before) != 2 || before[0].Name() != "gpu-a" || before[1].Name() != "gpu-b" {
		t.Fatalf("Plugins(devices) = %v, want gpu-a and gpu-b", before)
	}
	b := mustStatus(t, host, "devices", "gpu-b")

	if err := host.Reconcile(context.Background(), []pluginhost.Spec{gpuA}); err != nil {
		t.Fatal(err)
	}
	if slots := host.Plugins("devices"); len(slots) != 1 || slots[0].Name() != "gpu-a" {
		t.Errorf("after removing gpu-b: %v", slots)
	}
	if !e2e.ProcessGone(b.PID) {
		t.Errorf("removed plugin gpu-b (pid %d) still runs", b.PID)
	}
	if st := before[1].State(); st != pluginhost.Stopped {
		t.Errorf("the removed slot is %s, want stopped", st)
	}
}
