package sdk_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// prober records the probe set and answers a watch with one result per
// container it probes, or with the error or panic it was told to.
type prober struct {
	configurable
	mu         sync.Mutex
	probing    []string
	watchErr   error
	watchPanic bool
}

func (p *prober) SetContainerProbes(_ context.Context, c *probesv1.ContainerProbes) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = append(p.probing, c.GetContainerId())
	return nil
}

func (p *prober) RemoveContainerProbes(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = slices.DeleteFunc(p.probing, func(s string) bool { return s == id })
	return nil
}

func (p *prober) SyncProbes(_ context.Context, all []*probesv1.ContainerProbes) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = nil
	for _, c := range all {
		p.probing = append(p.probing, c.GetContainerId())
	}
	return nil
}

func (p *prober) WatchResults(_ context.Context, send func(*probesv1.ProbeResult) error) error {
	if p.watchPanic {
		panic("watch broke")
	}
	if p.watchErr != nil {
		return p.watchErr
	}
	p.mu.Lock()
	probing := slices.Clone(p.probing)
	p.mu.Unlock()
	for _, id := range probing {
		if err := send(&probesv1.ProbeResult{ContainerId: id, Result: probesv1.Result_RESULT_SUCCESS}); err != nil {
			return err
		}
	}
	return nil
}

func container(id string) *probesv1.ContainerProbes {
	return &probesv1.ContainerProbes{ContainerId: id}
}

// watch gathers every result of one WatchResults stream.
func watch(t *testing.T, h *sdktest.Harness) ([]string, error) {
	t.Helper()
	stream, err := h.Probes().WatchResults(t.Context(), &probesv1.WatchResultsRequest{})
	if err != nil {
		t.Fatalf("WatchResults: %v", err)
	}
	var ids []string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return ids, nil
		}
		if err != nil {
			return ids, err
		}
		ids = append(ids, resp.GetResult().GetContainerId())
	}
}

func TestProbes(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindProbes), &prober{})
	mustConfigure(t, h)
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if _, err := h.Probes().SetContainerProbes(ctx, &probesv1.SetContainerProbesRequest{Container: container(id)}); err != nil {
			t.Fatalf("SetContainerProbes(%s): %v", id, err)
		}
	}
	if _, err := h.Probes().RemoveContainerProbes(ctx, &probesv1.RemoveContainerProbesRequest{ContainerId: "a"}); err != nil {
		t.Fatalf("RemoveContainerProbes: %v", err)
	}
	if got, err := watch(t, h); err != nil || !slices.Equal(got, []string{"b"}) {
		t.Errorf("after set a, b and remove a: results %v, %v; want [b]", got, err)
	}

	sync, err := sendAll(t, h.Probes().SyncProbes, []*probesv1.SyncProbesRequest{{Container: container("x")}, {Container: container("y")}})
	if err != nil || sync == nil {
		t.Fatalf("SyncProbes: %v", err)
	}
	if got, err := watch(t, h); err != nil || !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("after SyncProbes x, y: results %v, %v", got, err)
	}
}

func TestProbesRefuseEmptyContainerIDs(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindProbes), &prober{})
	mustConfigure(t, h)
	_, err := h.Probes().SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: container("")})
	wantCode(t, "SetContainerProbes without an ID", err, codes.InvalidArgument)
	_, err = h.Probes().RemoveContainerProbes(t.Context(), &probesv1.RemoveContainerProbesRequest{})
	wantCode(t, "RemoveContainerProbes without an ID", err, codes.InvalidArgument)
	_, err = sendAll(t, h.Probes().SyncProbes, []*probesv1.SyncProbesRequest{{Container: container("x")}, {}})
	wantCode(t, "SyncProbes with an empty entry", err, codes.InvalidArgument)
}

func TestProbesWatchErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *prober
		want codes.Code
	}{
		{"retryable", &prober{watchErr: sdk.Retryable("the runtime is restarting")}, codes.Unavailable},
		{"plain", &prober{watchErr: errors.New("boom")}, codes.Unknown},
		{"deadline", &prober{watchErr: context.DeadlineExceeded}, codes.DeadlineExceeded},
		{"panic in a stream", &prober{watchPanic: true}, codes.Internal},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := sdktest.InProcess(t, info(sdk.KindProbes), c.p)
			mustConfigure(t, h)
			_, err := watch(t, h)
			wantCode(t, "WatchResults", err, c.want)
		})
	}
}
