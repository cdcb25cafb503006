package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/internal/prereq"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// fakeTree writes files (path relative to root -> content) under root.
func fakeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func meminfo(totalKiB, freeKiB, inactiveFileKiB int64) string {
	return fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nInactive(file): %d kB\n",
		totalKiB, freeKiB, freeKiB, inactiveFileKiB)
}

func TestMeasurer(t *testing.T) {
	const Ki = 1 << 10
	for _, tc := range []struct {
		name    string
		mode    machine.CgroupMode
		files   map[string]string
		nodeWS  int64
		nodeAvl int64
		podWS   int64
	}{
		{
			name: "v1: the root memory cgroup",
			mode: machine.CgroupV1,
			files: map[string]string{
				"proc/meminfo":                                      meminfo(8*Gi/Ki, 1*Gi/Ki, 1*Gi/Ki),
				"cgroup/memory/memory.usage_in_bytes":               fmt.Sprint(3 * Gi),
				"cgroup/memory/memory.stat":                         fmt.Sprintf("cache 5\ntotal_inactive_file %d\n", Gi),
				"cgroup/memory/kubepods/poda/memory.usage_in_bytes": fmt.Sprint(500 * Mi),
				"cgroup/memory/kubepods/poda/memory.stat":           fmt.Sprintf("inactive_file 1\ntotal_inactive_file %d\n", 100*Mi),
			},
			nodeWS: 2 * Gi, nodeAvl: 6 * Gi, podWS: 400 * Mi,
		},
		{
			name: "v2: meminfo for the node, memory.current for pods",
			mode: machine.CgroupV2,
			files: map[string]string{
				"proc/meminfo": meminfo(8*Gi/Ki, 5*Gi/Ki, 1*Gi/Ki),
				"cgroup/unified/kubepods/poda/memory.current": fmt.Sprint(500 * Mi),
				"cgroup/unified/kubepods/poda/memory.stat":    fmt.Sprintf("anon 1\ninactive_file %d\n", 100*Mi),
			},
			nodeWS: 2 * Gi, nodeAvl: 6 * Gi, podWS: 400 * Mi,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fakeTree(t, root, tc.files)
			cgroups := &machine.Cgroups{Mode: tc.mode, V1: map[string]string{"memory": filepath.Join(root, "cgroup/memory")}, Unified: filepath.Join(root, "cgroup/unified")}
			m := &Measurer{
				Cgroups: cgroups, RootDir: root, ProcFS: filepath.Join(root, "proc"),
				ImageFsMount: func(context.Context) (string, error) { return root, nil },
				Clock:        clocktesting.NewFakePassiveClock(epoch),
			}
			pods := []*typesv1.Pod{
				{Uid: "a", Name: "a", Namespace: "default", CgroupParent: "/kubepods/poda"},
				{Uid: "b", Name: "b", Namespace: "default", CgroupParent: "/kubepods/podb"}, // its cgroup is gone
				{Uid: "c", Name: "c", Namespace: "default"},                                 // no cgroup of its own
			}
			s, err := m.Sample(context.Background(), pods)
			if err != nil {
				t.Fatal(err)
			}
			mem := s.Node.GetMemory()
			if int64(mem.GetWorkingSetBytes()) != tc.nodeWS || int64(mem.GetAvailableBytes()) != tc.nodeAvl || !mem.GetTime().AsTime().Equal(epoch) {
				t.Errorf("node memory: working set %d, available %d at %v; want %d, %d at %v",
					mem.GetWorkingSetBytes(), mem.GetAvailableBytes(), mem.GetTime().AsTime(), tc.nodeWS, tc.nodeAvl, epoch)
			}
			if s.Node.GetFs().GetCapacityBytes() == 0 || s.Node.GetFs().AvailableBytes == nil || s.Node.GetFs().GetInodes() == 0 {
				t.Errorf("node filesystem %v lacks capacity, available bytes or inodes", s.Node.GetFs())
			}
			if s.Node.GetRuntime().GetImageFs().GetCapacityBytes() != s.Node.GetFs().GetCapacityBytes() {
				t.Errorf("image filesystem %v, want the same filesystem as the node's", s.Node.GetRuntime().GetImageFs())
			}
			if len(s.Pods) != 1 || s.Pods[0].GetPodRef().GetUid() != "a" || int64(s.Pods[0].GetMemory().GetWorkingSetBytes()) != tc.podWS {
				t.Errorf("pod stats %v, want pod a alone with working set %d", s.Pods, tc.podWS)
			}
			if dedicated, err := m.DedicatedImageFs(context.Background()); err != nil || dedicated {
				t.Errorf("DedicatedImageFs = %t, %v; want false: root dir and images share a filesystem", dedicated, err)
			}
		})
	}
}

func TestMeasurerFailsWithoutNodeMemory(t *testing.T) {
	root := t.TempDir()
	fakeTree(t, root, map[string]string{"proc/meminfo": meminfo(8<<20, 1<<20, 1<<20)})
	m := &Measurer{Cgroups: &machine.Cgroups{Mode: machine.CgroupV1, V1: map[string]string{"memory": filepath.Join(root, "nowhere")}}, RootDir: root, ProcFS: filepath.Join(root, "proc")}
	if _, err := m.Sample(context.Background(), nil); err == nil {
		t.Error("Sample without a readable root memory cgroup succeeded; want an error")
	}
}

// TestDedicatedImageFs tells a separate filesystem (a tmpfs) from the root
// dir's.
func TestDedicatedImageFs(t *testing.T) {
	const shm = "/dev/shm"
	if _, err := os.Stat(shm); err != nil {
		prereq.Missing(t, "no %s to serve as a separate filesystem: %v", shm, err)
	}
	m := &Measurer{RootDir: t.TempDir(), ImageFsMount: func(context.Context) (string, error) { return shm, nil }}
	if dedicated, err := m.DedicatedImageFs(context.Background()); err != nil || !dedicated {
		t.Errorf("DedicatedImageFs = %t, %v; want true for %s", dedicated, err, shm)
	}
}
