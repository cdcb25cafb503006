package logrotation

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

// blockingRuntime has n running containers whose status calls wait for
// release, counting how many are in flight at once.
type blockingRuntime struct {
	n        int
	release  chan struct{}
	mu       sync.Mutex
	inFlight int
	most     int
	checked  int
	reached  chan struct{} // closed once want calls are in flight
	want     int
	lists    int
}

func (f *blockingRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	f.lists++
	f.mu.Unlock()
	out := make([]*runtimeapi.Container, f.n)
	for i := range out {
		out[i] = &runtimeapi.Container{Id: fmt.Sprint(i), State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	}
	return out, nil
}

func (f *blockingRuntime) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	if f.inFlight == f.want && f.reached != nil {
		close(f.reached)
		f.reached = nil
	}
	f.mu.Unlock()
	<-f.release
	f.mu.Lock()
	f.inFlight--
	f.checked++
	f.mu.Unlock()
	// No log path: nothing to rotate.
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id}}, nil
}

func (f *blockingRuntime) ReopenContainerLog(context.Context, string) error { return nil }

// TestCycleUsesMaxWorkers: container_log_max_workers containers are
// checked at once, never more.
func TestCycleUsesMaxWorkers(t *testing.T) {
	rt := &blockingRuntime{n: 7, release: make(chan struct{}), reached: make(chan struct{}), want: 3}
	reached := rt.reached
	m, err := New(Options{Runtime: rt, MaxSize: 1, MaxFiles: 2, Interval: time.Second, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { m.Cycle(context.Background()); close(done) }()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("three workers never checked containers at once")
	}
	close(rt.release)
	<-done
	if rt.most != 3 || rt.checked != 7 {
		t.Errorf("at most %d checks at once and %d checked, want 3 and 7", rt.most, rt.checked)
	}
}

// TestRunChecksEveryInterval: Run checks at once, then every
// container_log_monitor_interval until its context ends; a negative
// max size turns it off.
func TestRunChecksEveryInterval(t *testing.T) {
	rt := &blockingRuntime{release: make(chan struct{})}
	close(rt.release)
	m, err := New(Options{Runtime: rt, MaxSize: 1, MaxFiles: 2, Interval: 10 * time.Millisecond, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { m.Run(ctx); close(stopped) }()
	lists := func() int { rt.mu.Lock(); defer rt.mu.Unlock(); return rt.lists }
	for deadline := time.Now().Add(10 * time.Second); lists() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d checks in 10s with a 10ms interval", lists())
		}
	}
	cancel()
	<-stopped

	off := &blockingRuntime{}
	m, err = New(Options{Runtime: off, MaxSize: -1, MaxFiles: 2, Interval: 10 * time.Millisecond, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.Run(context.Background()) // returns at once
	if off.lists != 0 {
		t.Errorf("rotation off, yet %d checks", off.lists)
	}
}
