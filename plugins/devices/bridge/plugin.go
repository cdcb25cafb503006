// Package bridge is the bridge to the upstream device-plugin API v1beta1:
// it serves the kubelet's Registration service on kubelet.sock, keeps a
// ListAndWatch stream to every registered vendor plugin, and offers all of
// their resources to the core as one microlet devices plugin, routing
// each call to the plugin owning the resource. Vendor DaemonSets (NVIDIA,
// RDMA, SR-IOV, ...) work unchanged. docs/devices.md describes it.
package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/plugins/devices/internal/feed"
	"github.com/microlet/microlet/plugins/devices/internal/resourcename"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	"github.com/microlet/microlet/sdk"
)

// EndpointStopGracePeriod is how long a plugin's resource stays offered,
// its devices unhealthy, after its stream ended (upstream
// endpointStopGracePeriod): time for it to come back before its capacity
// is dropped.
const EndpointStopGracePeriod = 5 * time.Minute

// preStartTimeout is upstream's KubeletPreStartContainerRPCTimeoutInSecs.
const preStartTimeout = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second

// Plugin bridges upstream device plugins to the core. It implements
// sdk.Plugin[Config], sdk.DevicePlugin, sdk.PreferredAllocator,
// sdk.PreStarter, sdk.Shutdowner and the upstream Registration service.
type Plugin struct {
	pluginapi.UnimplementedRegistrationServer

	feed        *feed.Feed
	gracePeriod time.Duration

	// ctx bounds the streams to vendor plugins; Shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// streams counts the running ListAndWatch streams and the directory
	// watch.
	streams sync.WaitGroup

	dir    string
	socket *kubeletSocket

	mu        sync.Mutex
	endpoints map[string]*endpoint // by resource
	closed    bool
}

// New is a bridge with upstream's grace period.
func New() *Plugin {
	ctx, cancel := context.WithCancel(context.Background())
	return &Plugin{feed: feed.New(), gracePeriod: EndpointStopGracePeriod, ctx: ctx, cancel: cancel, endpoints: map[string]*endpoint{}}
}

// Configure serves kubelet.sock in the directory, removes the sockets of
// plugins registered with an earlier bridge process so that every plugin
// registers again, as the kubelet does when it starts, and watches the
// directory.
func (p *Plugin) Configure(_ context.Context, cfg *Config, _ *sdk.Host) error {
	p.dir = filepath.Clean(cfg.DevicePluginDir)
	p.socket = newKubeletSocket(kubeletSocketPath(p.dir), p)
	// Listed before kubelet.sock is served: what a plugin makes after
	// that is its answer to the new kubelet.sock, and stays.
	stale := staleSockets(p.dir, p.socket.path)
	if err := p.socket.serve(); err != nil {
		return sdk.Retryable("serve device plugin registration: %v", err)
	}
	removeStale(stale)
	watch, err := newDirWatch(p.dir)
	if err != nil {
		p.socket.close()
		return sdk.Retryable("watch %s: %v", p.dir, err)
	}
	p.streams.Add(1)
	go func() {
		defer p.streams.Done()
		watch.run(p.ctx, p)
	}()
	return nil
}

// Register is upstream's Registration.Register: it checks the version and
// the resource name, connects to the plugin's endpoint, asks its options,
// replaces any plugin registered for the resource before, and starts its
// ListAndWatch stream.
func (p *Plugin) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	log := sdk.Log().With("resource", req.GetResourceName(), "endpoint", req.GetEndpoint(), "version", req.GetVersion())
	log.Info("device plugin registering")
	e, err := p.connect(ctx, req)
	if err != nil {
		log.Error("device plugin registration refused", "error", err)
		return &pluginapi.Empty{}, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		e.close()
		return &pluginapi.Empty{}, fmt.Errorf("the bridge is shutting down")
	}
	old := p.endpoints[e.resource]
	if old != nil {
		// Until the new plugin reports, the resource keeps the old one's
		// devices (unhealthy if it stopped), as upstream keeps a
		// re-registered resource's: a re-registration must not make it
		// vanish.
		e.devices, e.reported = old.devices, old.reported
	}
	p.endpoints[e.resource] = e
	streamCtx, stop := context.WithCancel(p.ctx)
	e.stopStream = stop
	p.streams.Add(1)
	go func() {
		defer p.streams.Done()
		p.watch(streamCtx, e)
	}()
	p.publishLocked()
	p.mu.Unlock()
	if old != nil {
		old.close()
		log.Info("device plugin re-registered; the previous endpoint is replaced", "previous_endpoint", old.socket)
	}
	log.Info("device plugin registered", "pre_start_required", e.options.GetPreStartRequired(),
		"get_preferred_allocation_available", e.options.GetGetPreferredAllocationAvailable())
	return &pluginapi.Empty{}, nil
}

// connect checks a registration and connects to its plugin.
func (p *Plugin) connect(ctx context.Context, req *pluginapi.RegisterRequest) (*endpoint, error) {
	if !slices.Contains(pluginapi.SupportedVersions[:], req.GetVersion()) {
		return nil, fmt.Errorf("requested API version %q is not supported by kubelet. Supported version is %q", req.GetVersion(), pluginapi.SupportedVersions)
	}
	if err := resourcename.Validate(req.GetResourceName()); err != nil {
		return nil, fmt.Errorf("the ResourceName %q is invalid: %w", req.GetResourceName(), err)
	}
	if !filepath.IsLocal(req.GetEndpoint()) {
		return nil, fmt.Errorf("the endpoint %q must be the name of a socket in %s", req.GetEndpoint(), p.dir)
	}
	socket := filepath.Join(p.dir, req.GetEndpoint())
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("the endpoint %q makes the socket path %s longer than %d bytes", req.GetEndpoint(), socket, maxSocketPath)
	}
	return connect(ctx, req.GetResourceName(), socket)
}

// watch keeps e's ListAndWatch stream until it ends, then marks e stopped.
func (p *Plugin) watch(ctx context.Context, e *endpoint) {
	err := p.listAndWatch(ctx, e)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endpoints[e.resource] != e {
		return // replaced by a re-registration, or dropped
	}
	if !p.closed {
		sdk.Log().Warn("ListAndWatch ended unexpectedly for device plugin; its devices are unhealthy until it registers again",
			"resource", e.resource, "error", err, "grace_period", p.gracePeriod)
	}
	// As upstream marks a stopped endpoint's resource: every device
	// unhealthy.
	e.stoppedAt, e.devices = time.Now(), unhealthy(e.devices)
	e.expiry = time.AfterFunc(p.gracePeriod, func() { p.expire(e) })
	p.publishLocked()
}

func (p *Plugin) listAndWatch(ctx context.Context, e *endpoint) error {
	stream, err := e.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		p.mu.Lock()
		if p.endpoints[e.resource] == e {
			e.devices, e.reported = resp.GetDevices(), true
			p.publishLocked()
		}
		p.mu.Unlock()
		sdk.Log().Debug("state pushed for device plugin", "resource", e.resource, "devices", len(resp.GetDevices()))
	}
}

// expire drops a plugin that did not come back within the grace period.
func (p *Plugin) expire(e *endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endpoints[e.resource] != e || !e.stopped() {
		return
	}
	delete(p.endpoints, e.resource)
	e.close()
	p.publishLocked()
	sdk.Log().Info("device plugin did not register again within the grace period; its resource is no longer offered", "resource", e.resource)
}

// socketGone ends the stream of the plugin whose socket was removed: it is
// handled as a plugin whose stream ended. A socket that is back by the time
// the event is handled belongs to a plugin that restarted and registers
// again on the same path; its new endpoint is left alone.
func (p *Plugin) socketGone(path string) {
	if _, err := os.Lstat(path); err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.endpoints {
		if e.socket == path && !e.stopped() {
			sdk.Log().Info("device plugin socket removed", "resource", e.resource, "socket", path)
			e.stopStream()
		}
	}
}

// publishLocked offers every plugin that has reported, ordered by resource.
func (p *Plugin) publishLocked() {
	resources := make([]*devicesv1.Resource, 0, len(p.endpoints))
	for name, e := range p.endpoints {
		if e.reported {
			resources = append(resources, toResource(name, e.options, e.devices))
		}
	}
	slices.SortFunc(resources, func(a, b *devicesv1.Resource) int { return strings.Compare(a.GetName(), b.GetName()) })
	p.feed.Publish(resources)
}

// ListAndWatch streams every resource of every registered plugin.
func (p *Plugin) ListAndWatch(ctx context.Context, send func([]*devicesv1.Resource) error) error {
	return p.feed.Stream(ctx, send)
}

// serving is the registered plugin of a resource that can take calls.
func (p *Plugin) serving(resource string) (*endpoint, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.endpoints[resource]
	switch {
	case e == nil:
		return nil, sdk.Invalid("no device plugin is registered for resource %q", resource)
	case e.stopped():
		return nil, sdk.Retryable("the device plugin of %s stopped %v ago; waiting for it to register again",
			resource, time.Since(e.stoppedAt).Round(time.Second))
	}
	return e, nil
}

// GetPreferredAllocation asks the resource's plugin.
func (p *Plugin) GetPreferredAllocation(ctx context.Context, req *devicesv1.GetPreferredAllocationRequest) (*devicesv1.GetPreferredAllocationResponse, error) {
	e, err := p.serving(req.GetResourceName())
	if err != nil {
		return nil, err
	}
	if !e.options.GetGetPreferredAllocationAvailable() {
		return nil, sdk.Unsupported("the device plugin of %s offers no preferred allocation", req.GetResourceName())
	}
	resp, err := e.client.GetPreferredAllocation(ctx, toUpstreamPreferred(req))
	if err != nil {
		return nil, fmt.Errorf("device plugin of %s: GetPreferredAllocation: %w", req.GetResourceName(), err)
	}
	return fromUpstreamPreferred(resp), nil
}

// Allocate asks the resource's plugin and checks that it answered for
// every container.
func (p *Plugin) Allocate(ctx context.Context, req *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error) {
	e, err := p.serving(req.GetResourceName())
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Allocate(ctx, toUpstreamAllocate(req))
	if err != nil {
		return nil, fmt.Errorf("device plugin of %s: Allocate: %w", req.GetResourceName(), err)
	}
	if got, want := len(resp.GetContainerResponses()), len(req.GetContainers()); got != want {
		return nil, fmt.Errorf("device plugin of %s answered Allocate for %d containers, asked for %d", req.GetResourceName(), got, want)
	}
	return fromUpstreamAllocate(resp), nil
}

// PreStartContainer asks the resource's plugin, within upstream's 30 s.
func (p *Plugin) PreStartContainer(ctx context.Context, req *devicesv1.PreStartContainerRequest) error {
	e, err := p.serving(req.GetResourceName())
	if err != nil {
		return err
	}
	if !e.options.GetPreStartRequired() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, preStartTimeout)
	defer cancel()
	if _, err := e.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: req.GetDeviceIds()}); err != nil {
		return fmt.Errorf("device plugin of %s: PreStartContainer: %w", req.GetResourceName(), err)
	}
	return nil
}

// Shutdown stops serving kubelet.sock (removing it if it is still this
// process's) and disconnects every plugin.
func (p *Plugin) Shutdown(context.Context) error {
	p.mu.Lock()
	p.closed = true
	endpoints := p.endpoints
	p.endpoints = map[string]*endpoint{}
	p.mu.Unlock()
	if p.socket != nil {
		p.socket.close()
	}
	p.cancel()
	for _, e := range endpoints {
		e.close()
	}
	p.streams.Wait()
	return nil
}
