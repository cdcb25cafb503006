package devices

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func checkpointPath(root string) string { return filepath.Join(root, CheckpointDir, CheckpointFile) }

// readCheckpoint decodes the checkpoint on disk.
func readCheckpoint(t *testing.T, root string) *checkpointData {
	t.Helper()
	raw, err := os.ReadFile(checkpointPath(root))
	if err != nil {
		t.Fatal(err)
	}
	data, err := decodeCheckpoint(raw)
	if err != nil {
		t.Fatalf("the checkpoint on disk does not decode: %v", err)
	}
	return data
}

// A restarted core keeps every allocation: the pod is admitted again
// without a new Allocate, gets the same options, and its devices are not
// handed to another pod. Until the plugin reports, the resource has no
// capacity and pods asking for it wait.
func TestCheckpointRestore(t *testing.T) {
	root := t.TempDir()
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	configured := &slots{list: []Slot{serve(t, "gpu", plugin)}}
	first := newManager(t, root, configured)
	run(t, first)
	offers(t, first, gpu, 2, 2)
	pod := newPod("1", container("app", gpu, 1))
	if got := first.Admit(t.Context(), pod, nil); !got.Admit {
		t.Fatal(got)
	}
	before, err := first.ContainerOptions(t.Context(), pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}

	data := readCheckpoint(t, root)
	if len(data.PodDeviceEntries) != 1 {
		t.Fatalf("checkpoint entries %+v, want one", data.PodDeviceEntries)
	}
	e := data.PodDeviceEntries[0]
	if e.PodUID != "1" || e.ContainerName != "app" || e.ResourceName != gpu || !slices.Equal(e.DeviceIDs[noNUMANode], []string{"a"}) || e.Plugin != "gpu" {
		t.Errorf("checkpoint entry %+v, want pod 1 app example.com/gpu a (NUMA -1) by gpu", e)
	}
	if !slices.Equal(data.RegisteredDevices[gpu], []string{"a", "b"}) || data.ResourcePlugins[gpu] != "gpu" {
		t.Errorf("registered devices %v, plugins %v", data.RegisteredDevices, data.ResourcePlugins)
	}

	// The restarted core, before its plugin reports.
	restarted := newManager(t, root, configured)
	if c, known := restarted.Capacity()[gpu]; !known || c.Value() != 0 {
		t.Errorf("capacity after a restart %v (known %v), want 0 until the plugin reports", c.String(), known)
	}
	if got := restarted.Admit(t.Context(), pod, nil); !got.Admit {
		t.Errorf("Admit of the restored pod = %+v, want admitted on its restored devices", got)
	}
	waiting := restarted.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil)
	if !waiting.Retry || !strings.Contains(waiting.Message, "devices/gpu") {
		t.Errorf("Admit of a new pod before the plugin reported = %+v, want a retry naming devices/gpu", waiting)
	}
	after, err := restarted.ContainerOptions(t.Context(), pod, &pod.Spec.Containers[0])
	if err != nil || !equalOptions(after, before) {
		t.Errorf("ContainerOptions after the restart = %+v, %v; want %+v", after, err, before)
	}

	run(t, restarted)
	offers(t, restarted, gpu, 2, 2)
	if got := restarted.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil); !got.Admit {
		t.Fatal(got)
	}
	if got := restarted.Admit(t.Context(), newPod("3", container("app", gpu, 1)), nil); got.Admit {
		t.Errorf("Admit of a third pod = %+v, want refused: the restored pod holds a", got)
	}
	calls := plugin.calls()
	if len(calls) != 2 || calls[1].GetPodUid() != "2" || calls[1].GetContainers()[0].GetDeviceIds()[0] != "b" {
		t.Errorf("Allocate calls %v, want pod 1 (before the restart) and pod 2 on b", calls)
	}
}

// A checkpoint that fails its checksum, or is not JSON, is set aside and
// not trusted.
func TestCorruptCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(raw []byte) []byte
	}{
		{name: "changed data", corrupt: func(raw []byte) []byte {
			return []byte(strings.Replace(string(raw), `"a"`, `"b"`, 1))
		}},
		{name: "truncated", corrupt: func(raw []byte) []byte { return raw[:len(raw)/2] }},
		{name: "checksum of other data", corrupt: func(raw []byte) []byte {
			var f checkpointFile
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			f.Checksum++
			out, _ := json.Marshal(f)
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			configured := &slots{list: []Slot{serve(t, "gpu", newFakePlugin(devices(gpu, "a")))}}
			m := newManager(t, root, configured)
			run(t, m)
			offers(t, m, gpu, 1, 1)
			if got := m.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil); !got.Admit {
				t.Fatal(got)
			}
			raw, err := os.ReadFile(checkpointPath(root))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(checkpointPath(root), tc.corrupt(raw), 0o600); err != nil {
				t.Fatal(err)
			}

			restarted := newManager(t, root, configured)
			if _, err := os.Stat(checkpointPath(root) + ".corrupt"); err != nil {
				t.Errorf("the corrupt checkpoint was not set aside: %v", err)
			}
			if _, err := os.Stat(checkpointPath(root)); !os.IsNotExist(err) {
				t.Errorf("the corrupt checkpoint is still in place: %v", err)
			}
			restarted.mu.Lock()
			n := len(restarted.allocations)
			restarted.mu.Unlock()
			if n != 0 {
				t.Errorf("%d pods' allocations trusted from a corrupt checkpoint", n)
			}
		})
	}
}

// Release frees a terminated pod's devices and removes it from the
// checkpoint; ReleaseStale frees restored pods no source wants.
func TestRelease(t *testing.T) {
	root := t.TempDir()
	configured := &slots{list: []Slot{serve(t, "gpu", newFakePlugin(devices(gpu, "a", "b")))}}
	m := newManager(t, root, configured)
	run(t, m)
	offers(t, m, gpu, 2, 2)
	first, second := newPod("1", container("app", gpu, 1)), newPod("2", container("app", gpu, 1))
	for _, p := range []*v1.Pod{first, second} {
		if got := m.Admit(t.Context(), p, nil); !got.Admit {
			t.Fatal(got)
		}
	}
	if got := m.Admit(t.Context(), newPod("3", container("app", gpu, 1)), nil); got.Admit {
		t.Fatal("a third pod was admitted on two devices")
	}
	if err := m.Release(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	if entries := readCheckpoint(t, root).PodDeviceEntries; len(entries) != 1 || entries[0].PodUID != "2" {
		t.Errorf("checkpoint entries after releasing pod 1: %+v, want pod 2 only", entries)
	}
	if got := m.Admit(t.Context(), newPod("3", container("app", gpu, 1)), nil); !got.Admit {
		t.Errorf("Admit after a release = %+v, want admitted", got)
	}

	// After a restart, pods 2 and 3 are restored; pod 2 is admitted again,
	// pod 3 is gone from its source.
	restarted := newManager(t, root, configured)
	if got := restarted.Admit(t.Context(), second, nil); !got.Admit {
		t.Fatal(got)
	}
	if err := restarted.ReleaseStale([]*v1.Pod{second}); err != nil {
		t.Fatal(err)
	}
	if entries := readCheckpoint(t, root).PodDeviceEntries; len(entries) != 1 || entries[0].PodUID != "2" {
		t.Errorf("checkpoint entries after ReleaseStale: %+v, want pod 2 only", entries)
	}
	// Pod 2 was admitted since the restart: it is left to Release even
	// when no source wants it (it is terminating).
	if err := restarted.ReleaseStale(nil); err != nil {
		t.Fatal(err)
	}
	if entries := readCheckpoint(t, root).PodDeviceEntries; len(entries) != 1 {
		t.Errorf("ReleaseStale freed a pod admitted since the restart: %+v", entries)
	}
}

// After a restart, a resource the checkpoint names that its plugin does not
// offer yet (a vendor plugin behind the bridge registers again) makes new
// pods wait, not fail, until the plugin offers it again.
func TestRestoredResourceWaitsForItsPlugin(t *testing.T) {
	root := t.TempDir()
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	configured := &slots{list: []Slot{serve(t, "gpu", plugin)}}
	first := newManager(t, root, configured)
	run(t, first)
	offers(t, first, gpu, 2, 2)
	if got := first.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil); !got.Admit {
		t.Fatal(got)
	}

	plugin.offer(devices("example.com/other", "x"))
	restarted := newManager(t, root, configured)
	run(t, restarted)
	offers(t, restarted, "example.com/other", 1, 1)
	waiting := restarted.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil)
	if !waiting.Retry || !strings.Contains(waiting.Message, "device plugin devices/gpu has not offered example.com/gpu again") {
		t.Errorf("Admit while the plugin does not offer the restored resource = %+v, want a retry", waiting)
	}
	plugin.offer(devices(gpu, "a", "b"))
	offers(t, restarted, gpu, 2, 2)
	if got := restarted.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil); !got.Admit {
		t.Errorf("Admit once the plugin offers the resource again = %+v", got)
	}
}
