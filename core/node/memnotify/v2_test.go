package memnotify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/microlet/microlet/core/node/machine"
)

func TestParseBreaches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    uint64
	}{
		{"quiet", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", 0},
		{"low does not count", "low 12\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0},
		{"every breach counts", "low 1\nhigh 3\nmax 2\noom 1\noom_kill 1\n", 7},
		{"unknown and malformed lines are skipped", "high 4\nfuture 9\nmax x\nbroken\n", 4},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseBreaches([]byte(tc.content)); got != tc.want {
				t.Errorf("parseBreaches(%q) = %d, want %d", tc.content, got, tc.want)
			}
		})
	}
}

// TestPlan checks which kernel files each cgroup mode arms, on a fake tree.
func TestPlan(t *testing.T) {
	v1 := &machine.Cgroups{Mode: machine.CgroupHybrid, V1: map[string]string{"memory": "/fs/memory"}, Unified: "/fs/unified"}
	v2 := &machine.Cgroups{Mode: machine.CgroupV2, Unified: "/fs/cgroup"}
	thresholds := []Threshold{{Cgroup: "", UsageBytes: 1000}, {Cgroup: "/kubepods", UsageBytes: 500}}
	for _, tc := range []struct {
		name    string
		cgroups *machine.Cgroups
		want    map[string]string // key -> file
	}{
		{"v1 thresholds: the node at the root, kubepods below cgroup_root", v1, map[string]string{
			`threshold "" 1000`:         "/fs/memory/memory.usage_in_bytes",
			`threshold "/kubepods" 500`: "/fs/memory/agent/kubepods/memory.usage_in_bytes",
		}},
		{"v2: PSI for the node, memory.events and PSI for kubepods", v2, map[string]string{
			`psi ""`:                    "/proc-fake/memory",
			`psi "/kubepods"`:           "/fs/cgroup/agent/kubepods/memory.pressure",
			`memory.events "/kubepods"`: "/fs/cgroup/agent/kubepods/memory.events",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Notifier{opts: Options{Cgroups: tc.cgroups, CgroupRoot: "/agent", ProcPressure: "/proc-fake", PSITrigger: DefaultPSITrigger}}
			got := map[string]string{}
			for key, spec := range n.plan(thresholds) {
				got[key] = spec.file
			}
			if len(got) != len(tc.want) {
				t.Errorf("plan has %d watches %v, want %d %v", len(got), got, len(tc.want), tc.want)
			}
			for key, file := range tc.want {
				if got[key] != file {
					t.Errorf("watch %s arms %q, want %q", key, got[key], file)
				}
			}
		})
	}
}

// TestMemoryEventsFireOnBreachesOnly drives a memory.events watch over a
// fake file: only a rise of high, max, oom or oom_kill is a notification.
func TestMemoryEventsFireOnBreachesOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "memory.events")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("low 0\nhigh 2\nmax 0\noom 0\noom_kill 0\n")
	w, err := openMemoryEvents(file, Event{Cgroup: "/kubepods", Source: sourceMemoryEvents})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	for _, step := range []struct {
		content string
		fire    bool
	}{
		{"low 5\nhigh 2\nmax 0\noom 0\noom_kill 0\n", false},
		{"low 5\nhigh 3\nmax 0\noom 0\noom_kill 0\n", true},
		{"low 5\nhigh 3\nmax 0\noom 0\noom_kill 0\n", false},
		{"low 5\nhigh 3\nmax 1\noom 1\noom_kill 1\n", true},
	} {
		write(step.content)
		fire, err := w.fired()
		if err != nil {
			t.Fatal(err)
		}
		if fire != step.fire {
			t.Errorf("after %q: fired = %t, want %t", step.content, fire, step.fire)
		}
	}
}

// TestPSITriggerWritten checks the trigger text the kernel receives, on a
// fake pressure file, and that a missing file means "not offered".
func TestPSITriggerWritten(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "memory.pressure")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := openPSI(file, "some 150000 1000000", Event{Source: sourcePSI})
	if err != nil {
		t.Fatal(err)
	}
	w.close()
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "some 150000 1000000\x00"; string(got) != want {
		t.Errorf("trigger written = %q, want %q", got, want)
	}
	if _, err := openPSI(filepath.Join(dir, "absent"), DefaultPSITrigger, Event{}); !errors.Is(err, errNotOffered) {
		t.Errorf("openPSI on a missing file: %v, want an error wrapping errNotOffered", err)
	}
}

// TestArmReportsWhatFailed: a threshold that cannot be armed is reported
// with its cgroup and file; nothing is left armed for it.
func TestArmReportsWhatFailed(t *testing.T) {
	dir := t.TempDir()
	n, err := New(Options{Cgroups: &machine.Cgroups{Mode: machine.CgroupV1, V1: map[string]string{"memory": dir}}, CgroupRoot: "/agent"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	err = n.Arm([]Threshold{{Cgroup: "/kubepods", UsageBytes: 100}})
	want := filepath.Join(dir, "agent/kubepods/memory.usage_in_bytes")
	if err == nil || !strings.Contains(err.Error(), `cgroup "/kubepods"`) || !strings.Contains(err.Error(), want) {
		t.Errorf("Arm on a missing cgroup: %v, want an error naming the cgroup and %s", err, want)
	}
	if armed := n.Armed(); len(armed) != 0 {
		t.Errorf("armed %v after the failure, want nothing", armed)
	}
}
