package cri

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRuntimeHealthErrors(t *testing.T) {
	ready := Condition{Type: runtimeapi.RuntimeReady, Status: true}
	netReady := Condition{Type: runtimeapi.NetworkReady, Status: true}
	cniDown := Condition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"}
	now := time.Now()
	tests := []struct {
		name       string
		health     RuntimeHealth
		runtimeErr string
		networkErr string
	}{
		{name: "not polled yet", health: RuntimeHealth{}, runtimeErr: "container runtime status check may not have completed yet"},
		{name: "ready", health: RuntimeHealth{RuntimeReady: ready, NetworkReady: netReady, CheckedAt: now}},
		{
			name:       "network not ready",
			health:     RuntimeHealth{RuntimeReady: ready, NetworkReady: cniDown, CheckedAt: now},
			networkErr: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
		},
		{
			name:       "runtime not ready",
			health:     RuntimeHealth{RuntimeReady: Condition{Type: runtimeapi.RuntimeReady, Reason: "Starting"}, NetworkReady: netReady, CheckedAt: now},
			runtimeErr: "container runtime not ready: RuntimeReady=false reason:Starting message:",
		},
		{
			name:       "runtime unreachable",
			health:     RuntimeHealth{RuntimeReady: ready, NetworkReady: cniDown, Err: errors.New("connection refused"), CheckedAt: now},
			runtimeErr: "container runtime is down: connection refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errString(tt.health.RuntimeErr()); got != tt.runtimeErr {
				t.Errorf("RuntimeErr() = %q; want %q", got, tt.runtimeErr)
			}
			if got := errString(tt.health.NetworkErr()); got != tt.networkErr {
				t.Errorf("NetworkErr() = %q; want %q", got, tt.networkErr)
			}
		})
	}
}

func TestStatusPoller(t *testing.T) {
	rt := newFakeRuntime()
	s := startFake(t, rt)
	c := connect(t, s, Config{RequestTimeout: 5 * time.Second})
	p := NewStatusPoller(c, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(stopped)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})

	// next waits for the health to satisfy ok, using only change
	// notifications, and returns it.
	next := func(what string, ok func(RuntimeHealth) bool) RuntimeHealth {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			h, changed := p.Health()
			if ok(h) {
				return h
			}
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("no change to %s; health is %+v", what, h)
			}
		}
	}

	h := next("ready", func(h RuntimeHealth) bool { return !h.CheckedAt.IsZero() })
	if h.RuntimeErr() != nil || h.NetworkErr() != nil {
		t.Fatalf("fake runtime reported as %v / %v", h.RuntimeErr(), h.NetworkErr())
	}

	rt.setConditions(
		&runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true},
		&runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
	)
	h = next("network not ready", func(h RuntimeHealth) bool { return h.NetworkErr() != nil })
	if want := "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"; h.NetworkErr().Error() != want {
		t.Errorf("NetworkErr() = %q; want %q", h.NetworkErr(), want)
	}

	rt.setConditions(&runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}, nil)
	h = next("runtime condition missing", func(h RuntimeHealth) bool { return h.RuntimeErr() != nil })
	if want := "container runtime not ready: RuntimeReady=false reason:ConditionMissing"; !strings.HasPrefix(h.RuntimeErr().Error(), want) {
		t.Errorf("RuntimeErr() = %q; want it to start with %q", h.RuntimeErr(), want)
	}

	s.stop()
	h = next("runtime down", func(h RuntimeHealth) bool { return h.Err != nil })
	if !strings.HasPrefix(h.RuntimeErr().Error(), "container runtime is down: CRI Status: the container runtime at "+s.endpoint()+" is unavailable") {
		t.Errorf("RuntimeErr() = %q", h.RuntimeErr())
	}

	rt.setConditions(
		&runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true},
		&runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true},
	)
	s.start()
	next("recovered", func(h RuntimeHealth) bool { return h.RuntimeErr() == nil && h.NetworkErr() == nil })
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
