package eviction

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/machine"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const (
	calm     = "some avg10=0.00 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"
	stalling = "some avg10=45.10 avg60=12.00 avg300=3.00 total=7000000\nfull avg10=21.50 avg60=5.00 avg300=1.00 total=3000000\n"
)

// pressureFixture is a procfs with /proc/pressure/memory and a unified
// hierarchy with one pod cgroup, each with the given contents.
func pressureFixture(t *testing.T, node, pod string) (*Pressure, *typesv1.Pod) {
	t.Helper()
	dir := t.TempDir()
	proc, unified := filepath.Join(dir, "proc"), filepath.Join(dir, "unified")
	podCgroup := "/kubepods/besteffort/podabc"
	for path, content := range map[string]string{
		filepath.Join(proc, "pressure", "memory"):              node,
		filepath.Join(unified, podCgroup, "memory.pressure"):   pod,
		filepath.Join(unified, "/kubepods", "memory.pressure"): calm,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &Pressure{ProcFS: proc, Unified: unified}, &typesv1.Pod{Uid: "abc", Name: "hog", Namespace: "default", CgroupParent: podCgroup}
}

func TestPressureReads(t *testing.T) {
	p, pod := pressureFixture(t, stalling, stalling)
	node, err := p.Node()
	if err != nil {
		t.Fatal(err)
	}
	if node.GetSome().GetAvg10() != 45.1 || node.GetSome().GetTotal() != 7000000 || node.GetFull().GetAvg60() != 5 {
		t.Errorf("node PSI %v", node)
	}
	cg, err := p.Cgroup(pod.GetCgroupParent())
	if err != nil || cg.GetFull().GetAvg10() != 21.5 {
		t.Errorf("pod PSI %v, %v", cg, err)
	}
	if _, err := (&Pressure{}).Cgroup("/x"); err == nil {
		t.Error("a cgroup without a unified hierarchy read without error")
	}
	if _, err := p.Cgroup("/gone"); err == nil {
		t.Error("a missing cgroup read without error")
	}
}

func TestAddPressure(t *testing.T) {
	p, pod := pressureFixture(t, stalling, stalling)
	sample := &stats.Sample{Node: &typesv1.NodeStats{}, Pods: []*typesv1.PodStats{
		{PodRef: &typesv1.PodReference{Uid: "abc"}},
		{PodRef: &typesv1.PodReference{Uid: "unknown"}},
	}}
	p.addPressure(sample, []*typesv1.Pod{pod})
	if sample.Node.GetMemory().GetPsi().GetSome().GetAvg10() != 45.1 {
		t.Errorf("node memory %v", sample.Node.GetMemory())
	}
	if sample.Pods[0].GetMemory().GetPsi().GetFull().GetAvg10() != 21.5 {
		t.Errorf("pod memory %v", sample.Pods[0].GetMemory())
	}
	if sample.Pods[1].GetMemory() != nil {
		t.Errorf("a pod without a known cgroup got %v", sample.Pods[1].GetMemory())
	}
}

func TestPressureReached(t *testing.T) {
	level := func(pods bool, line string, window uint32, percent float64) *evictionv1.PressureNotification {
		return &evictionv1.PressureNotification{Pods: pods, Line: line, WindowSeconds: window, Percent: percent}
	}
	tests := []struct {
		name      string
		node, pod string
		levels    []*evictionv1.PressureNotification
		want      string
	}{
		{"no levels", stalling, stalling, nil, ""},
		{"node some avg10 above", stalling, calm, []*evictionv1.PressureNotification{level(false, "some", 10, 40)}, "node some.avg10>40"},
		{"at the level is not above", stalling, calm, []*evictionv1.PressureNotification{level(false, "some", 10, 45.1)}, ""},
		{"node full avg60 below", stalling, calm, []*evictionv1.PressureNotification{level(false, "full", 60, 10)}, ""},
		{"a pod above", calm, stalling, []*evictionv1.PressureNotification{level(false, "some", 10, 40), level(true, "full", 10, 20)}, "pod default/hog full.avg10>20"},
		{"a bad window never matches", stalling, stalling, []*evictionv1.PressureNotification{level(false, "some", 30, 1)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, pod := pressureFixture(t, tt.node, tt.pod)
			if got := p.reached(tt.levels, func() []*typesv1.Pod { return []*typesv1.Pod{pod} }); got != tt.want {
				t.Errorf("reached = %q, want %q", got, tt.want)
			}
		})
	}
}

// BenchmarkPressurePoll is one poll of the psi strategy's default levels
// on this machine's real files: /proc/pressure/memory once, and the
// unified hierarchy's root memory.pressure standing in for each of 30
// pods' (the same kernel file, the same reads).
func BenchmarkPressurePoll(b *testing.B) {
	cg, err := machine.DetectCgroups()
	if err != nil || cg.Unified == "" {
		b.Skip("no unified cgroup hierarchy here")
	}
	p := &Pressure{Unified: cg.Unified}
	if _, err := p.Cgroup("/"); err != nil {
		b.Skip("no PSI here: ", err)
	}
	pods := make([]*typesv1.Pod, 30)
	for i := range pods {
		pods[i] = &typesv1.Pod{Name: fmt.Sprint(i), CgroupParent: "/"}
	}
	levels := []*evictionv1.PressureNotification{
		{Line: "some", WindowSeconds: 10, Percent: 40}, {Line: "full", WindowSeconds: 10, Percent: 20},
		{Pods: true, Line: "full", WindowSeconds: 10, Percent: 60},
	}
	for b.Loop() {
		if got := p.reached(levels, func() []*typesv1.Pod { return pods }); got != "" {
			b.Logf("level reached: %s", got)
		}
	}
}
