package pluginhost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeProcess is a process without an OS process behind it: enough for the
// lease accounting, which is all Acquire and retire look at.
func fakeProcess(name string) (*process, chan struct{}) {
	exited := make(chan struct{})
	pr := newProcess()
	pr.spec = resolvedSpec{Spec: Spec{Kind: "eviction", Name: name}}
	pr.exited = exited
	return pr, exited
}

func TestRetireWaitsForLeases(t *testing.T) {
	pr, _ := fakeProcess("a")
	if !pr.lease() || !pr.lease() {
		t.Fatal("a serving process refused a lease")
	}
	drained := make(chan bool)
	go func() { drained <- pr.retire(time.Hour, nil) }()
	<-pr.done // retire closes done first, so streams move on
	if pr.lease() {
		t.Error("a retiring process granted a lease")
	}
	pr.release()
	select {
	case <-drained:
		t.Fatal("retire returned with a call still in flight")
	default:
	}
	pr.release()
	if !<-drained {
		t.Error("retire says calls were cut short; all were released")
	}
}

func TestRetireGivesUp(t *testing.T) {
	pr, exited := fakeProcess("a")
	pr.lease()
	abort := make(chan struct{})
	close(abort)
	if pr.retire(time.Hour, abort) {
		t.Error("an aborted drain with a call in flight says it drained")
	}

	pr, exited = fakeProcess("b")
	pr.lease()
	close(exited)
	if !pr.retire(time.Hour, nil) {
		t.Error("a process that exited has nothing left to drain")
	}
}

func TestAcquireFollowsTheSwitch(t *testing.T) {
	p := newPlugin(nil, "eviction", "a")
	ctx := context.Background()
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a slot without a process: %v, want ErrUnavailable", err)
	}

	old, _ := fakeProcess("a")
	p.setServing(old, startedToServe)
	lease, err := p.Acquire(ctx)
	if err != nil || lease.process != old {
		t.Fatalf("lease %+v, %v: want one on the serving process", lease, err)
	}

	// A swap: switch first, then retire. The lease on the old process keeps
	// it draining; new leases go to the new process.
	next, _ := fakeProcess("b")
	p.setServing(next, swappedToServe)
	drained := make(chan bool)
	go func() { drained <- old.retire(time.Hour, nil) }()
	<-lease.Done
	second, err := p.Acquire(ctx)
	if err != nil || second.process != next {
		t.Fatalf("after the switch: lease %+v, %v; want one on the new process", second, err)
	}
	lease.Release()
	lease.Release() // idempotent
	if !<-drained {
		t.Error("the old process did not drain")
	}
	if st := p.Status(); st.Name != "b" || st.Swaps != 1 || st.State != Serving {
		t.Errorf("status %+v, want b serving after one swap", st)
	}

	p.setState(Restarting, errors.New("pid 7: signal: killed"))
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "is restarting (last error: pid 7: signal: killed)") {
		t.Errorf("a restarting slot: %v, want ErrUnavailable saying why", err)
	}
}
