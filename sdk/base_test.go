package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

type recorderConfig struct {
	Threshold sdk.Quantity `json:"threshold"`
	// FailWith makes Configure fail: "plain", "retryable" or "config".
	FailWith string `json:"fail_with"`
}

// recorder is an eviction strategy that records what the SDK hands it.
type recorder struct {
	mu         sync.Mutex
	configures int
	threshold  int64
	host       *sdk.Host
	shutdowns  int
}

func (r *recorder) Configure(_ context.Context, c *recorderConfig, host *sdk.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configures++
	switch c.FailWith {
	case "plain":
		return errors.New("cannot open /dev/thing")
	case "retryable":
		return sdk.Retryable("the device is busy")
	case "config":
		return sdk.ConfigErrors{{Path: "threshold", Message: "more than this node has"}}
	}
	r.threshold, r.host = c.Threshold.Value(), host
	return nil
}

// Synchronize panics on a memory notification, and otherwise reports what
// the host service says: one eviction per pod, its message the output of
// "hostname" in the pod's first container.
func (r *recorder) Synchronize(ctx context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	if req.GetTrigger() == evictionv1.Trigger_TRIGGER_MEMORY_NOTIFICATION {
		panic("a bug in the strategy")
	}
	resp := &evictionv1.SynchronizeResponse{State: fmt.Appendf(nil, "threshold=%d", r.threshold)}
	if r.host == nil {
		return resp, nil
	}
	pods, err := r.host.Pods(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		out, err := r.host.ExecSync(ctx, p.GetContainers()[0].GetContainerId(), []string{"hostname"}, time.Second)
		if err != nil {
			return nil, err
		}
		resp.Evictions = append(resp.Evictions, &evictionv1.Eviction{PodUid: p.GetUid(), Message: r.host.NodeName + ":" + string(out.GetStdout())})
	}
	return resp, nil
}

func (r *recorder) Shutdown(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shutdowns++
	return nil
}

func TestIdentity(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindEviction), &recorder{})
	id := h.Identity()
	if id.GetKind() != "eviction" || id.GetName() != "test" || id.GetPluginVersion() != "1.2.3" || !slices.Equal(id.GetApiVersions(), []string{"v1"}) {
		t.Errorf("GetIdentity = %v", id)
	}
	if caps := h.Capabilities(); len(caps) != 0 {
		t.Errorf("a strategy with no optional interface reports capabilities %v", caps)
	}
}

func TestKindCallsWaitForConfigure(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindEviction), &recorder{})
	_, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{})
	wantCode(t, "Synchronize before Configure", err, codes.FailedPrecondition)
	if err := h.Configure(map[string]any{"threshold": "1Ki"}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	resp, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{})
	if err != nil || string(resp.GetState()) != "threshold=1024" {
		t.Fatalf("Synchronize after Configure = %v, %v", resp, err)
	}
}

func TestConfigureOnlyOnce(t *testing.T) {
	r := &recorder{}
	h := sdktest.InProcess(t, info(sdk.KindEviction), r)
	mustConfigure(t, h)
	err := h.Configure(map[string]any{"threshold": "2Ki"})
	wantCode(t, "second Configure", err, codes.FailedPrecondition)
	if r.configures != 1 || r.threshold != 0 {
		t.Errorf("the plugin was configured %d times, threshold %d; want once, with the first block", r.configures, r.threshold)
	}
}

func TestConfigureErrors(t *testing.T) {
	for _, c := range []struct {
		failWith    string
		want        codes.Code
		wantMessage string
		wantField   string
	}{
		{failWith: "plain", want: codes.InvalidArgument, wantMessage: "cannot open /dev/thing"},
		{failWith: "retryable", want: codes.Unavailable, wantMessage: "the device is busy"},
		{failWith: "config", want: codes.InvalidArgument, wantMessage: "threshold: more than this node has", wantField: "threshold"},
	} {
		t.Run(c.failWith, func(t *testing.T) {
			r := &recorder{}
			h := sdktest.InProcess(t, info(sdk.KindEviction), r)
			err := h.Configure(map[string]any{"fail_with": c.failWith})
			wantCode(t, "Configure", err, c.want)
			if !strings.Contains(status.Convert(err).Message(), c.wantMessage) {
				t.Errorf("Configure error %q does not contain %q", status.Convert(err).Message(), c.wantMessage)
			}
			if c.wantField != "" && fieldViolations(err)[c.wantField] == "" {
				t.Errorf("Configure error has no field violation for %q: %v", c.wantField, fieldViolations(err))
			}
			// A failed Configure applies nothing; the core may try again.
			if err := h.Configure(map[string]any{"threshold": "1"}); err != nil {
				t.Fatalf("Configure after a failed one: %v", err)
			}
			if r.configures != 2 || r.threshold != 1 {
				t.Errorf("configures %d, threshold %d; want 2 and 1", r.configures, r.threshold)
			}
		})
	}
}

func TestInvalidConfigBlock(t *testing.T) {
	r := &recorder{}
	h := sdktest.InProcess(t, info(sdk.KindEviction), r)
	block := map[string]any{"threshold": "lots", "treshold": "1Gi"}
	want := map[string]string{
		"threshold": `invalid quantity "lots": unexpected "l" at offset 0; expected a number with an optional sign, fraction and suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent such as e3)`,
		"treshold":  `unknown key (did you mean "threshold"?)`,
	}

	errs, err := h.ValidateConfig(block)
	if err != nil {
		t.Fatalf("ValidateConfig: %v", err)
	}
	got := map[string]string{}
	for _, e := range errs {
		got[e.Path] = e.Message
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ValidateConfig = %v\nwant %v", got, want)
	}

	err = h.Configure(block)
	wantCode(t, "Configure", err, codes.InvalidArgument)
	if v := fieldViolations(err); fmt.Sprint(v) != fmt.Sprint(want) {
		t.Errorf("Configure field violations = %v\nwant %v", v, want)
	}
	if r.configures != 0 {
		t.Errorf("the plugin's Configure ran on an invalid block")
	}
}

func TestAPIVersionCheck(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindEviction), &recorder{})
	base := basev1.NewPluginServiceClient(h.Conn())
	_, err := base.ValidateConfig(t.Context(), &basev1.ValidateConfigRequest{ApiVersion: "v2"})
	wantCode(t, "ValidateConfig v2", err, codes.Unimplemented)
	_, err = base.Configure(t.Context(), &basev1.ConfigureRequest{ApiVersion: "v2"})
	wantCode(t, "Configure v2", err, codes.Unimplemented)
	if !strings.Contains(err.Error(), `eviction API "v2" is not served (serving [v1])`) {
		t.Errorf("Configure v2: %v", err)
	}
	if _, err := base.Configure(t.Context(), &basev1.ConfigureRequest{ApiVersion: "v1"}); err != nil {
		t.Errorf("Configure v1: %v", err)
	}
}

func TestPanicFailsOnlyTheCall(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindEviction), &recorder{})
	mustConfigure(t, h)
	_, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{Trigger: evictionv1.Trigger_TRIGGER_MEMORY_NOTIFICATION})
	wantCode(t, "Synchronize that panics", err, codes.Internal)
	if !strings.Contains(err.Error(), "plugin panicked in /microlet.eviction.v1.EvictionService/Synchronize: a bug in the strategy") {
		t.Errorf("panic error: %v", err)
	}
	if _, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{}); err != nil {
		t.Errorf("Synchronize after a panic: %v", err)
	}
}

// fakeHost is the core's HostService as a test sees it: two pods, and an
// ExecSync that answers "hostname" with the container's ID.
type fakeHost struct {
	hostv1.UnimplementedHostServiceServer
}

func (fakeHost) ListPods(_ *hostv1.ListPodsRequest, stream grpc.ServerStreamingServer[hostv1.ListPodsResponse]) error {
	for _, uid := range []string{"uid-a", "uid-b"} {
		pod := &typesv1.Pod{Uid: uid, Containers: []*typesv1.Container{{ContainerId: "ctr-" + uid}}}
		if err := stream.Send(&hostv1.ListPodsResponse{Pod: pod}); err != nil {
			return err
		}
	}
	return nil
}

func (fakeHost) ExecSync(_ context.Context, req *hostv1.ExecSyncRequest) (*hostv1.ExecSyncResponse, error) {
	if !slices.Equal(req.GetCommand(), []string{"hostname"}) || req.GetTimeout().AsDuration() != time.Second {
		return nil, status.Errorf(codes.InvalidArgument, "unexpected exec %v (timeout %v)", req.GetCommand(), req.GetTimeout().AsDuration())
	}
	return &hostv1.ExecSyncResponse{Stdout: []byte(req.GetContainerId())}, nil
}

// TestHostServiceThroughBroker calls back into the core from inside a plugin
// call, through the go-plugin broker, as a real plugin does.
func TestHostServiceThroughBroker(t *testing.T) {
	r := &recorder{}
	h := sdktest.InProcess(t, info(sdk.KindEviction), r, sdktest.WithHostService(fakeHost{}), sdktest.WithNodeName("node-a"))
	mustConfigure(t, h)
	if r.host == nil || r.host.NodeName != "node-a" {
		t.Fatalf("Configure got host %+v, want one for node-a", r.host)
	}
	resp, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{})
	if err != nil {
		t.Fatalf("Synchronize: %v", err)
	}
	var got []string
	for _, e := range resp.GetEvictions() {
		got = append(got, e.GetPodUid()+"="+e.GetMessage())
	}
	if want := []string{"uid-a=node-a:ctr-uid-a", "uid-b=node-a:ctr-uid-b"}; !slices.Equal(got, want) {
		t.Errorf("host round trip = %v, want %v", got, want)
	}
}

func TestNoHostService(t *testing.T) {
	r := &recorder{}
	h := sdktest.InProcess(t, info(sdk.KindEviction), r)
	mustConfigure(t, h)
	if r.host != nil {
		t.Errorf("Configure got a host though the core offers none")
	}
}

func TestShutdown(t *testing.T) {
	r := &recorder{}
	h := sdktest.InProcess(t, info(sdk.KindEviction), r)
	if err := h.Shutdown(); err != nil || r.shutdowns != 1 {
		t.Errorf("Shutdown = %v, plugin saw %d shutdowns; want nil and 1", err, r.shutdowns)
	}
}

type durationConfig struct {
	Period time.Duration `json:"period"`
}

type durationPlugin struct{ strategy }

func (durationPlugin) Configure(context.Context, *durationConfig, *sdk.Host) error { return nil }

type stringConfigPlugin struct{ strategy }

func (stringConfigPlugin) Configure(context.Context, *string, *sdk.Host) error { return nil }

// strategy is the smallest eviction strategy.
type strategy struct{ configurable }

func (strategy) Synchronize(context.Context, *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	return &evictionv1.SynchronizeResponse{}, nil
}

func TestNewGRPCPluginRefuses(t *testing.T) {
	logger := hclog.NewNullLogger()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown kind", newPlugin(sdk.Info{Kind: "scheduler", Name: "x", Version: "1"}, strategy{}),
			`unknown plugin kind "scheduler" (known: cgroup, devices, eviction, imagegc, probes, stats)`},
		{"bad name", newPlugin(sdk.Info{Kind: "eviction", Name: "Largest_Pod", Version: "1"}, strategy{}),
			`Name "Largest_Pod" is not lower-case letters, digits and '-'`},
		{"no version", newPlugin(sdk.Info{Kind: "eviction", Name: "x"}, strategy{}),
			`Version is empty`},
		{"wrong kind", newPlugin(info(sdk.KindProbes), strategy{}),
			`probes plugin "test": does not implement sdk.Prober (SetContainerProbes, RemoveContainerProbes, SyncProbes, WatchResults)`},
		{"nil plugin", newPlugin[noConfig](info(sdk.KindEviction), nil),
			`the plugin is nil`},
		{"time.Duration in config", newPlugin(info(sdk.KindEviction), durationPlugin{}),
			`key period: time.Duration decodes from a number of nanoseconds; use sdk.Duration`},
		{"config not a block", newPlugin(info(sdk.KindEviction), stringConfigPlugin{}),
			`config type string: a config block is a block of keys and values; use a struct`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
				t.Errorf("NewGRPCPlugin error %v, want one containing %q", c.err, c.want)
			}
		})
	}
	if _, err := sdk.NewGRPCPlugin(info(sdk.KindEviction), sdk.Plugin[noConfig](strategy{}), logger); err != nil {
		t.Errorf("NewGRPCPlugin of a valid plugin: %v", err)
	}
}

func newPlugin[C any](i sdk.Info, p sdk.Plugin[C]) error {
	_, err := sdk.NewGRPCPlugin(i, p, hclog.NewNullLogger())
	return err
}
