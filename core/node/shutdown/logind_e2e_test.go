//go:build e2e

package shutdown

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/internal/privatebus"
)

// These tests run against a real dbus-daemon on a private bus with the
// logind stand-in (internal/privatebus): this machine has no systemd.

// recordingPods stands in for the sync loop: it records each kill and the
// status the kill would give.
type recordingPods struct {
	pods []*v1.Pod
	mu   sync.Mutex
	kill []string
	st   map[string]v1.PodStatus
}

func (r *recordingPods) ActivePods() []*v1.Pod { return r.pods }

func (r *recordingPods) KillPod(pod *v1.Pod, _ bool, grace *int64, fn podworkers.PodStatusFunc) error {
	s := v1.PodStatus{Phase: v1.PodRunning}
	fn(&s)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kill = append(r.kill, pod.Name+"/"+time.Duration(*grace*int64(time.Second)).String())
	r.st[pod.Name] = s
	return nil
}

func TestShutdownOnPrivateBus(t *testing.T) {
	bus := privatebus.Start(t)
	conf := t.TempDir()
	logind := privatebus.StartLogind(t, bus, privatebus.LogindOptions{Delay: 5 * time.Second, ConfDir: conf})
	pods := &recordingPods{st: map[string]v1.PodStatus{}, pods: []*v1.Pod{
		pod("critical", ptr[int32](2000000000), ptr[int64](30)),
		pod("ordinary", nil, ptr[int64](3)),
	}}
	changed := make(chan struct{}, 4)
	// The state file of a previous shutdown sets the gauges at start.
	stateDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(stateDir, StateFile), []byte(`{"startTime":"2026-01-02T03:04:05Z","endTime":"2026-01-02T03:04:35Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	m, err := New(Options{Periods: Periods(30*time.Second, 10*time.Second, nil), Pods: pods, BusAddress: bus.Address,
		LogindConfDir: conf, OnChange: func() { changed <- struct{}{} }, StateDir: stateDir, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if start, end := shutdownGauges(t, reg); start != 1767323045 || end != 1767323075 {
		t.Errorf("gauges after start = %v, %v; want the previous shutdown's 1767323045, 1767323075", start, end)
	}
	// 5s < 30s: the manager wrote upstream's drop-in and had logind reload.
	data, err := os.ReadFile(filepath.Join(conf, "99-kubelet.conf"))
	if err != nil || string(data) != "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=30\n" {
		t.Errorf("logind drop-in: %q %v", data, err)
	}
	logind.Expect("reload 30000000", 10*time.Second)
	logind.Expect("inhibit shutdown kubelet delay Kubelet needs time to handle node shutdown", 10*time.Second)
	logind.Expect("held 1", 10*time.Second)

	before := time.Now().Truncate(time.Second)
	logind.Send("prepare true")
	logind.Expect("released 1", 30*time.Second)
	// Upstream's state file holds this shutdown's start and end, written
	// before the lock was released; the gauges say the same.
	var st state
	if data, err := os.ReadFile(filepath.Join(stateDir, StateFile)); err != nil || json.Unmarshal(data, &st) != nil {
		t.Errorf("state file: %q, %v", data, err)
	}
	if st.StartTime.Before(before) || st.EndTime.Before(st.StartTime) {
		t.Errorf("state %+v: want a start after %v and an end after it", st, before)
	}
	if start, end := shutdownGauges(t, reg); start != float64(st.StartTime.Unix()) || end != float64(st.EndTime.Unix()) {
		t.Errorf("gauges %v, %v; want the state file's %+v", start, end, st)
	}
	logind.Expect("delay-done", 30*time.Second)
	<-changed
	if err := m.ShuttingDown(); err == nil || err.Error() != "node is shutting down" {
		t.Errorf("ShuttingDown = %v", err)
	}
	if a := m.Admit(ctx, pod("new", nil, nil), nil); a.Admit || a.Reason != "NodeShutdown" || a.Message != "Pod was rejected as the node is shutting down." {
		t.Errorf("Admit while shutting down = %+v", a)
	}
	pods.mu.Lock()
	if got := strings.Join(pods.kill, " "); got != "ordinary/3s critical/10s" {
		t.Errorf("kills = %q, want the ordinary pod with its own 3s, then the critical one capped at 10s", got)
	}
	for name, s := range pods.st {
		if s.Phase != v1.PodFailed || s.Reason != TerminatedReason || s.Message != TerminatedMessage {
			t.Errorf("%s: status %+v", name, s)
		}
	}
	pods.mu.Unlock()

	// Cancelled: admission opens again and a new lock is taken.
	from := len(logind.Lines())
	logind.Send("prepare false")
	if _, ok := logind.Wait("held 2", from, 10*time.Second); !ok {
		t.Errorf("no new inhibitor lock after the cancelled shutdown: %q", logind.Lines())
	}
	<-changed
	if err := m.ShuttingDown(); err != nil {
		t.Errorf("ShuttingDown after the cancellation = %v", err)
	}
}

// TestInhibitDelayNotRaised: when logind keeps a shorter
// InhibitDelayMaxSec after the reload, the manager refuses to start, as
// upstream.
func TestInhibitDelayNotRaised(t *testing.T) {
	bus := privatebus.Start(t)
	privatebus.StartLogind(t, bus, privatebus.LogindOptions{Delay: 5 * time.Second, ConfDir: t.TempDir()})
	m, err := New(Options{Periods: Periods(30*time.Second, 0, nil), Pods: &recordingPods{}, BusAddress: bus.Address, LogindConfDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = m.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "InhibitDelayMaxSec is 5s") {
		t.Errorf("Start = %v, want a refusal naming logind's 5s", err)
	}
}

// TestShutdownByPodPriorityOnPrivateBus: the priority-based form
// (shutdown_grace_period_by_pod_priority) with three groups: logind's
// delay is raised to their sum, and the pods are killed lowest priority
// first, each with its own grace capped by its group's period.
func TestShutdownByPodPriorityOnPrivateBus(t *testing.T) {
	bus := privatebus.Start(t)
	conf := t.TempDir()
	logind := privatebus.StartLogind(t, bus, privatebus.LogindOptions{Delay: 5 * time.Second, ConfDir: conf})
	pods := &recordingPods{st: map[string]v1.PodStatus{}, pods: []*v1.Pod{
		pod("critical", ptr[int32](2000000000), nil),
		pod("custom", ptr[int32](150000), ptr[int64](4)),
		pod("ordinary", nil, ptr[int64](60)),
	}}
	periods := Periods(0, 0, []Period{{100000, 8 * time.Second}, {0, 20 * time.Second}, {2000000000, 5 * time.Second}})
	m, err := New(Options{Periods: periods, Pods: pods, BusAddress: bus.Address, LogindConfDir: conf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	logind.Expect("reload 33000000", 10*time.Second)
	logind.Expect("held 1", 10*time.Second)
	logind.Send("prepare true")
	logind.Expect("released 1", 30*time.Second)
	pods.mu.Lock()
	defer pods.mu.Unlock()
	if got := strings.Join(pods.kill, " "); got != "ordinary/20s custom/4s critical/5s" {
		t.Errorf("kills = %q, want ordinary (capped at its group's 20s), custom (its own 4s), then critical (5s)", got)
	}
}
