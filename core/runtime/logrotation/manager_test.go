package logrotation

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime has one running container whose log reopen creates the file
// anew, as containerd's does.
type fakeRuntime struct{ log string }

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return []*runtimeapi.Container{{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil
}

func (f *fakeRuntime) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c1", LogPath: f.log}}, nil
}

func (f *fakeRuntime) ReopenContainerLog(context.Context, string) error {
	return os.WriteFile(f.log, nil, 0o640)
}

func TestManagerRotatesCompressesAndBounds(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := New(Options{Runtime: &fakeRuntime{log: log}, MaxSize: 4, MaxFiles: 3, Interval: time.Second, Workers: 1,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"aaaa", "bbbb", "cc", "dddd"} {
		if err := os.WriteFile(log, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		m.Cycle(context.Background())
		now = now.Add(time.Second)
	}
	// "cc" stayed below the size: three rotations, of which the oldest
	// ("aaaa") was removed; the newest stays plain, the other is gzipped.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"0.log", "0.log.20260101-000001.gz", "0.log.20260101-000003"}
	if !slices.Equal(names, want) {
		t.Fatalf("files = %q, want %q", names, want)
	}
	files, err := Files(log)
	if err != nil || !slices.Equal(files, []string{filepath.Join(dir, want[1]), filepath.Join(dir, want[2]), log}) {
		t.Errorf("Files = %q, %v", files, err)
	}
	f, err := os.Open(filepath.Join(dir, want[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || string(b) != "bbbb" {
		t.Errorf("compressed rotation holds %q, %v; want bbbb", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, want[2])); string(b) != "dddd" {
		t.Errorf("newest rotation holds %q, want dddd", b)
	}
}
