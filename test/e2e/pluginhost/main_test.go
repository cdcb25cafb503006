//go:build e2e

package pluginhoste2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/lastresort"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

var bins *Binaries

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "microlet-testbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err = Build(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		stop := lastresort.Watch()
		code = m.Run()
		stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

var evictionAlpha = pluginhost.Spec{Kind: "eviction", Name: "alpha"}

// serving installs the v1 test plugin for each spec, starts a host with
// opts, and reconciles the specs.
func serving(t *testing.T, opts pluginhost.Options, specs ...pluginhost.Spec) (*pluginhost.Host, string) {
	t.Helper()
	dir := PluginDir(t)
	for _, s := range specs {
		Install(t, bins.Plugin, dir, s.BinaryName())
	}
	host := NewHost(t, dir, opts)
	if err := host.Reconcile(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	return host, dir
}

// callLoop calls GetIdentity on p until stopped and tallies the outcomes.
type callLoop struct {
	stop     chan struct{}
	done     chan struct{}
	ok       atomic.Int64
	mu       sync.Mutex
	failures []error
	versions map[string]int
}

func startCallLoop(p *pluginhost.Plugin, pause time.Duration) *callLoop {
	l := &callLoop{stop: make(chan struct{}), done: make(chan struct{}), versions: map[string]int{}}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			id, err := GetIdentity(context.Background(), p)
			l.mu.Lock()
			if err != nil {
				l.failures = append(l.failures, err)
			} else {
				l.ok.Add(1)
				l.versions[id.GetPluginVersion()]++
			}
			l.mu.Unlock()
			time.Sleep(pause)
		}
	}()
	return l
}

// waitOK waits until n more calls have succeeded.
func (l *callLoop) waitOK(t *testing.T, n int64) {
	t.Helper()
	target := l.ok.Load() + n
	Eventually(t, 10*time.Second, fmt.Sprintf("%d more successful calls", n), func() bool { return l.ok.Load() >= target })
}

func (l *callLoop) end() ([]error, map[string]int) {
	close(l.stop)
	<-l.done
	return l.failures, l.versions
}

// events records what the host reports.
type events struct {
	mu  sync.Mutex
	all []pluginhost.Event
}

func (e *events) record(ev pluginhost.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) count(typ pluginhost.EventType) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (e *events) last(typ pluginhost.EventType) (pluginhost.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.all) - 1; i >= 0; i-- {
		if e.all[i].Type == typ {
			return e.all[i], true
		}
	}
	return pluginhost.Event{}, false
}

func mustStatus(t *testing.T, host *pluginhost.Host, kind pluginhost.Kind, name string) pluginhost.Status {
	t.Helper()
	st, ok := SlotStatus(host, kind, name)
	if !ok {
		t.Fatalf("no %s/%s slot in %+v", kind, name, host.Status())
	}
	return st
}

// servedByAnotherProcess waits until the slot serves from a pid other than old.
func servedByAnotherProcess(t *testing.T, host *pluginhost.Host, kind pluginhost.Kind, old int) pluginhost.Status {
	t.Helper()
	var st pluginhost.Status
	Eventually(t, 10*time.Second, "a new process serves", func() bool {
		st = mustStatus(t, host, kind, "")
		return st.State == pluginhost.Serving && st.PID != 0 && st.PID != old
	})
	return st
}

// fakeHostService answers GetNode with the node's name.
type fakeHostService struct {
	hostv1.UnimplementedHostServiceServer
	node string
}

func (f fakeHostService) GetNode(context.Context, *hostv1.GetNodeRequest) (*hostv1.GetNodeResponse, error) {
	return &hostv1.GetNodeResponse{Node: &typesv1.Node{Name: f.node}}, nil
}
