package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/microlet/microlet/core/node/machine"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk/sdktest"
)

func TestNewRefuses(t *testing.T) {
	cg := fakeV2Tree(t)
	noCPU := t.TempDir()
	if err := os.WriteFile(filepath.Join(noCPU, "cgroup.controllers"), []byte("memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"the systemd driver", Options{CgroupDriver: "systemd", Capacity: testCapacity(), Cgroups: cg}, `cgroup_driver "systemd" is not supported`},
		{"an unknown driver", Options{CgroupDriver: "cgroupv3", Capacity: testCapacity(), Cgroups: cg}, `unknown cgroup_driver "cgroupv3"`},
		{"no machine", Options{}, "Capacity and Cgroups are required"},
		{"an unclean root", Options{CgroupRoot: "/a/../b", Capacity: testCapacity(), Cgroups: cg}, `cgroup_root "/a/../b" is not a clean absolute cgroup path`},
		{"a missing root", Options{CgroupRoot: "/missing", Capacity: testCapacity(), Cgroups: cg}, `cgroup_root "/missing" does not exist`},
		{"a v2 tree without cpu", Options{Capacity: testCapacity(), Cgroups: &machine.Cgroups{Mode: machine.CgroupV2, Unified: noCPU}},
			"does not offer the cpu controller"},
		{"v1 without memory", Options{Capacity: testCapacity(), Cgroups: &machine.Cgroups{Mode: machine.CgroupV1, V1: map[string]string{"cpu": "/sys/fs/cgroup/cpu"}}},
			"the cgroup v1 memory controller is not mounted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// Run applies the node's cgroups at start, then closes NodeTried, and
// retries the removal of pod cgroups that held processes.
func TestRun(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	m, err := New(Options{Plugin: servePlanner(t, nil), Capacity: testCapacity(), Cgroups: cg,
		ReapplyInterval: 10 * time.Millisecond, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("p", [2]string{"cpu=100m", ""})
	plan, err := m.PlanPod(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	procs := filepath.Join(cg.Unified, plan.CgroupParent, "cgroup.procs")
	if err := os.WriteFile(procs, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(pod.UID); !errors.Is(err, errBusy) {
		t.Fatalf("RemovePod = %v, want errBusy", err)
	}
	if err := os.WriteFile(procs, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	select {
	case <-m.NodeTried():
		t.Fatal("NodeTried is closed before Run")
	default:
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// What waits for NodeTried (the eviction manager) finds kubepods set.
	waitFor(t, "NodeTried", func() bool {
		select {
		case <-m.NodeTried():
			return true
		default:
			return false
		}
	})
	if _, err := os.Stat(filepath.Join(cg.Unified, "kubepods/cpu.weight")); err != nil {
		t.Errorf("kubepods has no cpu.weight once NodeTried is closed: %v", err)
	}
	waitFor(t, "the stuck pod cgroup to go", func() bool {
		_, err := os.Stat(filepath.Join(cg.Unified, plan.CgroupParent))
		return errors.Is(err, os.ErrNotExist)
	})
}

// waitFor polls cond until it holds, failing the test after a generous
// bound; it measures nothing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A pod's cgroup never moves, and one whose plan a restarted core does not
// know is found in the kubelet's layout when the pod is removed.
func TestPodCgroupStaysAndIsFoundAfterARestart(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	sp := &scriptedPlanner{}
	h := sdktest.InProcess(t, pluginInfo, sp)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	plugin := &switchPlugin{client: h.Cgroup()}
	m, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("b", [2]string{"cpu=100m", ""})
	if _, err := m.PlanPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	sp.script(func(r *cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
		r.CgroupParent = "/elsewhere/podb"
		return r, nil
	})
	plan, err := m.PlanPod(t.Context(), pod)
	if err != nil || plan.CgroupParent != "/kubepods/burstable/podb" {
		t.Errorf("PlanPod with another layout = %+v, %v; want the pod's cgroup to stay", plan, err)
	}
	if _, err := os.Stat(filepath.Join(cg.Unified, "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a second pod cgroup was made: %v", err)
	}

	restarted, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.RemovePod(pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cg.Unified, "kubepods/burstable/podb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pod cgroup is left: %v", err)
	}
}
