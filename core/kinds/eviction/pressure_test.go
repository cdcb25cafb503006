package eviction

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

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

// TestAddPressureKeepsTheSamples: what the stats plugin's sample already
// carries is not read again.
func TestAddPressureKeepsTheSamples(t *testing.T) {
	p, pod := pressureFixture(t, stalling, stalling)
	given := func() *typesv1.MemoryStats {
		return &typesv1.MemoryStats{Psi: &typesv1.PSIStats{Some: &typesv1.PSIData{Avg10: 1}}}
	}
	sample := &stats.Sample{Node: &typesv1.NodeStats{Memory: given()}, Pods: []*typesv1.PodStats{
		{PodRef: &typesv1.PodReference{Uid: "abc"}, Memory: given()},
	}}
	p.addPressure(sample, []*typesv1.Pod{pod})
	if got := sample.Node.GetMemory().GetPsi().GetSome().GetAvg10(); got != 1 {
		t.Errorf("node some avg10 %v, want the sample's 1", got)
	}
	if got := sample.Pods[0].GetMemory().GetPsi().GetSome().GetAvg10(); got != 1 {
		t.Errorf("pod some avg10 %v, want the sample's 1", got)
	}
}

func TestPressureReached(t *testing.T) {
	level := func(pods bool, line string, window uint32, percent float64, uids ...string) *evictionv1.PressureNotification {
		return &evictionv1.PressureNotification{Pods: pods, Line: line, WindowSeconds: window, Percent: percent, PodUids: uids}
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
		{"a listed pod above", calm, stalling, []*evictionv1.PressureNotification{level(false, "some", 10, 40), level(true, "full", 10, 20, "abc")}, "pod default/hog full.avg10>20"},
		{"an unlisted pod above", calm, stalling, []*evictionv1.PressureNotification{level(true, "full", 10, 20, "other")}, ""},
		{"a bad window never matches", stalling, stalling, []*evictionv1.PressureNotification{level(false, "some", 30, 1)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, pod := pressureFixture(t, tt.node, tt.pod)
			listed := []podCgroup{{uid: pod.GetUid(), name: pod.GetNamespace() + "/" + pod.GetName(), cgroup: pod.GetCgroupParent()}}
			if got := p.reached(tt.levels, func() []podCgroup { return listed }); got != tt.want {
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
	pods := make([]podCgroup, 30)
	uids := make([]string, len(pods))
	for i := range pods {
		uids[i] = fmt.Sprint(i)
		pods[i] = podCgroup{uid: uids[i], name: uids[i], cgroup: "/"}
	}
	levels := []*evictionv1.PressureNotification{
		{Line: "some", WindowSeconds: 10, Percent: 40}, {Line: "full", WindowSeconds: 10, Percent: 20},
		{Pods: true, Line: "full", WindowSeconds: 10, Percent: 60, PodUids: uids},
	}
	for b.Loop() {
		if got := p.reached(levels, func() []podCgroup { return pods }); got != "" {
			b.Logf("level reached: %s", got)
		}
	}
}

// TestPressureLevelStartsCycle: with the psi strategy, the node's stall
// above its level starts a cycle on the poll (labelled memory_pressure),
// which evicts on the core's reading of it; with the kubelet strategy,
// which asks for no level, nothing is polled.
func TestPressureLevelStartsCycle(t *testing.T) {
	f := newFixture(t, servePlugin(t, "kubelet", nil), 1)
	f.stats.samples = []*stats.Sample{sample(epoch, Gi, 50*Gi, nil)}
	f.cycle()
	if f.m.pressurePoll() != nil {
		t.Fatal("the kubelet strategy asks for no level, yet the manager polls")
	}

	hog := pod("hog", "", "")
	f = newFixture(t, servePlugin(t, "psi", map[string]any{"hard": []any{}, "memory_pressure": []any{"some.avg10>40"}}), 1, hog)
	f.stats.samples = []*stats.Sample{sample(epoch, Gi, 50*Gi, map[*v1.Pod]int64{hog: 500 * Mi})}
	p, _ := pressureFixture(t, calm, calm)
	f.m.opts.Pressure = p
	f.cycle()
	if len(f.pods.killed()) != 0 {
		t.Fatalf("a calm node evicted %v", f.pods.killedUIDs())
	}
	if f.m.pressurePoll() == nil {
		t.Fatal("the psi strategy asked for levels, yet the manager does not poll")
	}
	stalled, _ := pressureFixture(t, stalling, calm)
	f.m.opts.Pressure = stalled

	f.run(t)
	deadline := time.Now().Add(30 * time.Second)
	f.waitCycles(t, "psi", "memory_pressure", 1, DefaultPressurePollInterval/4, "while the node stalls above its level")
	for f.evictions("memory.pressure") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no memory.pressure eviction; kills %v", f.pods.killedUIDs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := f.pods.killedUIDs(); len(got) != 1 || got[0] != hog.UID {
		t.Errorf("killed %v, want the hog", got)
	}
}
