package sdk

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	"github.com/microlet/microlet/sdk/transport"
)

// baseServer serves microlet.base.v1.PluginService for a plugin.
type baseServer[C any] struct {
	basev1.UnimplementedPluginServiceServer

	info         Info
	apiVersions  []string
	capabilities []string
	plugin       Plugin[C]
	broker       *plugin.GRPCBroker
	logger       hclog.Logger

	// releaseMemory is set when serving as a process of its own; an
	// in-process test harness must not unmap its test binary's pages.
	releaseMemory bool

	// configureMu serialises Configure; configured opens the kind's
	// service (see guardedRegistrar) once Configure has succeeded.
	configureMu sync.Mutex
	configured  *atomic.Bool
}

func (s *baseServer[C]) GetIdentity(context.Context, *basev1.GetIdentityRequest) (*basev1.GetIdentityResponse, error) {
	return &basev1.GetIdentityResponse{
		Kind:          s.info.Kind,
		Name:          s.info.Name,
		PluginVersion: s.info.Version,
		ApiVersions:   s.apiVersions,
	}, nil
}

func (s *baseServer[C]) GetCapabilities(context.Context, *basev1.GetCapabilitiesRequest) (*basev1.GetCapabilitiesResponse, error) {
	return &basev1.GetCapabilitiesResponse{Capabilities: s.capabilities}, nil
}

func (s *baseServer[C]) ValidateConfig(_ context.Context, req *basev1.ValidateConfigRequest) (*basev1.ValidateConfigResponse, error) {
	if err := s.checkAPIVersion(req.GetApiVersion()); err != nil {
		return nil, err
	}
	_, errs := decodeConfig[C](req.GetConfig())
	return &basev1.ValidateConfigResponse{Errors: errs.proto()}, nil
}

// Configure applies a config block once per process: a changed block makes
// the core start a new process beside this one. A failed Configure applies
// nothing, so the core may try again.
func (s *baseServer[C]) Configure(ctx context.Context, req *basev1.ConfigureRequest) (*basev1.ConfigureResponse, error) {
	if err := s.checkAPIVersion(req.GetApiVersion()); err != nil {
		return nil, err
	}
	s.configureMu.Lock()
	defer s.configureMu.Unlock()
	if s.configured.Load() {
		return nil, status.Error(codes.FailedPrecondition, "already configured: the core starts a new plugin process for a new config")
	}
	cfg, errs := decodeConfig[C](req.GetConfig())
	if len(errs) > 0 {
		return nil, InvalidConfig(errs)
	}
	if level := hclog.LevelFromString(req.GetLogLevel()); level != hclog.NoLevel {
		s.logger.SetLevel(level)
	}
	host, err := s.dialHost(req)
	if err != nil {
		return nil, err
	}
	if err := s.plugin.Configure(ctx, cfg, host); err != nil {
		host.close()
		return nil, asStatus(err, codes.InvalidArgument)
	}
	s.configured.Store(true)
	if s.releaseMemory {
		go releaseMemory(s.logger)
	}
	return &basev1.ConfigureResponse{}, nil
}

// dialHost connects to the HostService the core serves for this process
// over the go-plugin broker; nil when the core offers none.
func (s *baseServer[C]) dialHost(req *basev1.ConfigureRequest) (*Host, error) {
	id := req.GetHostServiceBrokerId()
	if id == 0 {
		return nil, nil
	}
	conn, err := s.broker.DialWithOptions(id, transport.DialOptions()...)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "dial the core's host service (broker id %d): %v", id, err)
	}
	return &Host{client: hostv1.NewHostServiceClient(conn), conn: conn, NodeName: req.GetNodeName()}, nil
}

func (s *baseServer[C]) Shutdown(ctx context.Context, _ *basev1.ShutdownRequest) (*basev1.ShutdownResponse, error) {
	if sd, ok := any(s.plugin).(Shutdowner); ok {
		if err := sd.Shutdown(ctx); err != nil {
			return nil, asStatus(err, codes.Internal)
		}
	}
	return &basev1.ShutdownResponse{}, nil
}

// checkAPIVersion accepts the versions of the kind's API the plugin
// serves. An empty version is accepted: the core may validate a config
// before it has chosen.
func (s *baseServer[C]) checkAPIVersion(v string) error {
	if v == "" || slices.Contains(s.apiVersions, v) {
		return nil
	}
	return status.Error(codes.Unimplemented, fmt.Sprintf("%s API %q is not served (serving %v)", s.info.Kind, v, s.apiVersions))
}

// Shutdowner is implemented by plugins that hold something to release
// (files, sockets, child processes) when the core stops them.
type Shutdowner interface {
	Shutdown(ctx context.Context) error
}
