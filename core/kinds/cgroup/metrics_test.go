package cgroup

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// setTree is a tree of cgroup paths in memory.
type setTree map[string]bool

func (t setTree) apply(path string, _ *cgroupv1.CgroupSettings) error { t[path] = true; return nil }
func (t setTree) exists(path string) bool                             { return t[path] }
func (t setTree) remove(path string) error                            { delete(t, path); return nil }

func TestTimedTreeRecordsUpstreamOperations(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	timed, err := newTimedTree(setTree{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return timed.apply("/kubepods/podA", nil) }, // create
		func() error { return timed.apply("/kubepods/podA", nil) }, // update
		func() error { return timed.apply("/kubepods/podB", nil) }, // create
		func() error { return timed.remove("/kubepods/podA") },     // destroy
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]uint64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kubelet_cgroup_manager_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			counts[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{"create": 2, "update": 1, "destroy": 1}
	for op, n := range want {
		if counts[op] != n {
			t.Errorf("%s observed %d times; want %d (all: %v)", op, counts[op], n, counts)
		}
	}
	if got := testutil.CollectAndCount(reg); got != len(want) {
		t.Errorf("%d series; want %d", got, len(want))
	}
}
