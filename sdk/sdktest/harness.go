// Package sdktest runs a microlet plugin in a test the way the core runs
// it: over go-plugin's gRPC connection, with the same handshake, plugin set
// and (optionally) a HostService reached through the go-plugin broker.
//
// InProcess serves a plugin value inside the test binary, for fast tests of
// its logic through the real adapters; Subprocess launches a built plugin
// binary, for tests of the artefact an operator installs. Both give a
// Harness with the base calls and a typed client per kind.
//
//	h := sdktest.InProcess(t, info, &strategy{})
//	if err := h.Configure(map[string]any{"memory_available": "100Mi"}); err != nil { ... }
//	resp, err := h.Eviction().Synchronize(ctx, req)
package sdktest

import (
	"encoding/json"
	"io"
	"os/exec"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/transport"
)

// Option changes how a Harness serves or launches a plugin.
type Option func(*options)

type options struct {
	hostService hostv1.HostServiceServer
	nodeName    string
	env         []string
	stderr      io.Writer
}

// WithHostService serves s to the plugin as the core's HostService: once,
// over the go-plugin broker, with its broker ID in every ConfigureRequest,
// as the core does. Without it the plugin's Configure gets a nil *sdk.Host.
func WithHostService(s hostv1.HostServiceServer) Option {
	return func(o *options) { o.hostService = s }
}

// WithNodeName sets ConfigureRequest.node_name; the default is "sdktest-node".
func WithNodeName(name string) Option {
	return func(o *options) { o.nodeName = name }
}

// WithEnv adds KEY=VALUE entries to a Subprocess plugin's environment. As
// with the core, the plugin inherits nothing from the test's environment.
func WithEnv(env ...string) Option {
	return func(o *options) { o.env = append(o.env, env...) }
}

// WithStderr copies a Subprocess plugin's raw standard error to w. Its log
// lines reach the test log either way.
func WithStderr(w io.Writer) Option {
	return func(o *options) { o.stderr = w }
}

// Harness is a plugin served for a test. Its methods fail the test on
// transport errors and return the plugin's own answers; call them from the
// test's goroutine.
type Harness struct {
	t        testing.TB
	conn     *grpc.ClientConn
	base     basev1.PluginServiceClient
	nodeName string
	// hostID is the broker ID of the HostService; 0 when none is served.
	hostID uint32
	// hostDone is closed when the HostService goroutine has returned.
	hostDone chan struct{}
}

// InProcess serves p inside the test binary on go-plugin's in-memory test
// connection, with the plugin set sdk.Serve would serve, and stops it when
// the test ends. The SDK's guards apply (kind calls before Configure fail,
// a panic fails only its call); the process-level parts of sdk.Serve (the
// stdout guard, GOMAXPROCS, memory release, orphan exit) do not.
func InProcess[C any](t testing.TB, info sdk.Info, p sdk.Plugin[C], opts ...Option) *Harness {
	t.Helper()
	o := collectOptions(opts)
	logger := newTestLogger(t, "plugin."+info.Kind+"."+info.Name)
	gp, err := sdk.NewGRPCPlugin(info, p, logger)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{transport.PluginName: gp})
	h := &Harness{t: t, nodeName: o.nodeName}
	t.Cleanup(func() {
		// Stop the server first: client.Close would otherwise ask it to
		// stop itself through go-plugin's controller, racing this Stop.
		server.Stop()
		_ = client.Close()
		h.waitForHostService()
	})
	h.dispense(client, o)
	return h
}

// Subprocess launches the plugin binary at binaryPath as the core does
// (transport.ClientConfig: gRPC, the shared handshake, no inherited
// environment) and kills it when the test ends. Its log lines go to the
// test log.
func Subprocess(t testing.TB, binaryPath string, opts ...Option) *Harness {
	t.Helper()
	o := collectOptions(opts)
	cmd := exec.Command(binaryPath)
	cmd.Env = append([]string{transport.EnvLogLevel + "=debug"}, o.env...)
	// The plugin's socket goes to a directory the test removes, even when
	// the plugin is killed and cannot unlink it.
	cfg := transport.ClientConfig(cmd, t.TempDir(), newTestLogger(t, "plugin"))
	if o.stderr != nil {
		cfg.Stderr = o.stderr
	}
	client := plugin.NewClient(cfg)
	h := &Harness{t: t, nodeName: o.nodeName}
	t.Cleanup(func() {
		client.Kill()
		if !client.Exited() {
			t.Errorf("sdktest: plugin %s still runs after Kill", binaryPath)
		}
		h.waitForHostService()
	})
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("sdktest: launch %s: %v", binaryPath, err)
	}
	h.dispense(rpc, o)
	return h
}

func collectOptions(opts []Option) options {
	o := options{nodeName: "sdktest-node"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// dispense takes the plugin's connection and, when asked to, serves the
// HostService over the broker.
func (h *Harness) dispense(client plugin.ClientProtocol, o options) {
	h.t.Helper()
	raw, err := client.Dispense(transport.PluginName)
	if err != nil {
		h.t.Fatalf("sdktest: dispense %q: %v", transport.PluginName, err)
	}
	conn := raw.(*transport.Conn)
	h.conn = conn.Conn
	h.base = basev1.NewPluginServiceClient(conn.Conn)
	if o.hostService == nil {
		return
	}
	h.hostID = conn.Broker.NextId()
	h.hostDone = make(chan struct{})
	go func() {
		defer close(h.hostDone)
		conn.Broker.AcceptAndServe(h.hostID, func(opts []grpc.ServerOption) *grpc.Server {
			s := grpc.NewServer(opts...)
			hostv1.RegisterHostServiceServer(s, o.hostService)
			return s
		})
	}()
}

// waitForHostService waits for the HostService goroutine, which returns
// once the broker is closed.
func (h *Harness) waitForHostService() {
	if h.hostDone != nil {
		<-h.hostDone
	}
}

// Conn is the gRPC connection to the plugin.
func (h *Harness) Conn() *grpc.ClientConn { return h.conn }

// Identity returns the plugin's GetIdentity answer.
func (h *Harness) Identity() *basev1.GetIdentityResponse {
	h.t.Helper()
	resp, err := h.base.GetIdentity(h.t.Context(), &basev1.GetIdentityRequest{})
	if err != nil {
		h.t.Fatalf("sdktest: GetIdentity: %v", err)
	}
	return resp
}

// Capabilities returns the plugin's GetCapabilities answer.
func (h *Harness) Capabilities() []string {
	h.t.Helper()
	resp, err := h.base.GetCapabilities(h.t.Context(), &basev1.GetCapabilitiesRequest{})
	if err != nil {
		h.t.Fatalf("sdktest: GetCapabilities: %v", err)
	}
	return resp.GetCapabilities()
}

// Configure sends config as the plugin's config block, with the newest API
// version the plugin serves, the node name and the HostService's broker ID,
// and returns the plugin's answer: nil, or a gRPC status error (an invalid
// block is INVALID_ARGUMENT with google.rpc.BadRequest details).
func (h *Harness) Configure(config map[string]any) error {
	h.t.Helper()
	versions := h.Identity().GetApiVersions()
	if len(versions) == 0 {
		h.t.Fatalf("sdktest: the plugin serves no API version")
	}
	_, err := h.base.Configure(h.t.Context(), &basev1.ConfigureRequest{
		ApiVersion:          versions[len(versions)-1],
		Config:              h.block(config),
		HostServiceBrokerId: h.hostID,
		NodeName:            h.nodeName,
	})
	return err
}

// ValidateConfig returns the plugin's verdict on config without applying it.
func (h *Harness) ValidateConfig(config map[string]any) ([]sdk.ConfigError, error) {
	h.t.Helper()
	resp, err := h.base.ValidateConfig(h.t.Context(), &basev1.ValidateConfigRequest{Config: h.block(config)})
	if err != nil {
		return nil, err
	}
	var errs []sdk.ConfigError
	for _, e := range resp.GetErrors() {
		errs = append(errs, sdk.ConfigError{Path: e.GetPath(), Message: e.GetMessage()})
	}
	return errs, nil
}

// Shutdown sends the base Shutdown call.
func (h *Harness) Shutdown() error {
	h.t.Helper()
	_, err := h.base.Shutdown(h.t.Context(), &basev1.ShutdownRequest{})
	return err
}

// block converts a config map to the google.protobuf.Struct the core sends,
// through JSON, so that typed Go values ([]string, nested maps, numbers of
// any type) are accepted as an operator's HCL would produce them.
func (h *Harness) block(config map[string]any) *structpb.Struct {
	h.t.Helper()
	if config == nil {
		config = map[string]any{}
	}
	raw, err := json.Marshal(config)
	if err != nil {
		h.t.Fatalf("sdktest: the config map is not JSON: %v", err)
	}
	block := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, block); err != nil {
		h.t.Fatalf("sdktest: the config map is not a block of keys and values: %v", err)
	}
	return block
}

// Eviction is a client of the plugin's microlet.eviction.v1 service.
func (h *Harness) Eviction() evictionv1.EvictionServiceClient {
	return evictionv1.NewEvictionServiceClient(h.conn)
}

// ImageGC is a client of the plugin's microlet.imagegc.v1 service.
func (h *Harness) ImageGC() imagegcv1.ImageGCServiceClient {
	return imagegcv1.NewImageGCServiceClient(h.conn)
}

// Probes is a client of the plugin's microlet.probes.v1 service.
func (h *Harness) Probes() probesv1.ProbesServiceClient {
	return probesv1.NewProbesServiceClient(h.conn)
}

// Cgroup is a client of the plugin's microlet.cgroup.v1 service.
func (h *Harness) Cgroup() cgroupv1.CgroupServiceClient {
	return cgroupv1.NewCgroupServiceClient(h.conn)
}

// Devices is a client of the plugin's microlet.devices.v1 service.
func (h *Harness) Devices() devicesv1.DevicesServiceClient {
	return devicesv1.NewDevicesServiceClient(h.conn)
}

// Stats is a client of the plugin's microlet.stats.v1 service.
func (h *Harness) Stats() statsv1.StatsServiceClient {
	return statsv1.NewStatsServiceClient(h.conn)
}
