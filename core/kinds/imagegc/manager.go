// Package imagegc is the core's side of the imagegc plugin: it lists dead
// containers, not-ready sandboxes and images from the runtime, streams them
// to the plugin, and removes what the plugin's plans name, with the logs of
// removed containers. It runs container GC every minute and image GC every
// five minutes, as the kubelet does, and node-level reclaim for the eviction
// manager on demand.
//
// Without a serving imagegc plugin a GC cycle is skipped, and reclaim
// returns an error wrapping pluginhost.ErrUnavailable (docs/gc.md).
package imagegc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pluginhost"
	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
)

// The kubelet's periods (pkg/kubelet/kubelet.go ContainerGCPeriod,
// ImageGCPeriod).
const (
	ContainerGCPeriod = time.Minute
	ImageGCPeriod     = 5 * time.Minute
)

// Runtime is the CRI client as GC uses it (core/runtime/cri.Client).
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	RemoveContainer(ctx context.Context, containerID string) error
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	StopPodSandbox(ctx context.Context, sandboxID string) error
	RemovePodSandbox(ctx context.Context, sandboxID string) error
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// Plugin is how the manager reaches the imagegc plugin. Its errors wrap
// pluginhost.ErrUnavailable when no plugin serves, and
// pluginhost.ErrNotConfigured as well when none is configured.
type Plugin = pluginhost.Caller[imagegcv1.ImageGCServiceClient]

// PodState says what the core knows of a pod.
type PodState interface {
	// PodDeleted reports that no source wants the pod and no pod worker
	// knows it, so that all its containers, sandboxes and logs may go. It
	// is false for every pod until every source has delivered its pods.
	PodDeleted(uid types.UID) bool
}

// Options configure a Manager.
type Options struct {
	Runtime Runtime
	Plugin  Plugin
	Pods    PodState
	// PodLogsDir holds the pods' log directories; ContainerLogsDir the
	// /var/log/containers symlinks ("" when none are made).
	PodLogsDir       string
	ContainerLogsDir string
	Logger           hclog.Logger
	// Clock gives the times sent to the plugin; nil is the real clock.
	Clock clock.PassiveClock
	// Events records upstream's GC events on node NodeName
	// (ContainerGCFailed, ImageGCFailed, FreeDiskSpaceFailed); nil
	// records none.
	Events events.Recorder
	// NodeName is the node's name.
	NodeName string
}

// Manager runs container and image GC. It is safe for concurrent use; one
// collection runs at a time.
type Manager struct {
	opts   Options
	log    hclog.Logger
	images *imageTracker

	running sync.Mutex // one collection at a time

	mu sync.Mutex
	// skipped is the kind whose absence was last logged, per collection
	// ("containers", "images"), so that an unconfigured plugin is logged
	// once, not every period.
	skipped map[string]string
	// imagesFailed: the last periodic image collection failed.
	imagesFailed bool
}

// New checks the options.
func New(opts Options) (*Manager, error) {
	if opts.Runtime == nil || opts.Plugin == nil || opts.Pods == nil {
		return nil, errors.New("gc: Runtime, Plugin and Pods are required")
	}
	if opts.PodLogsDir == "" {
		return nil, errors.New("gc: PodLogsDir is required")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.Events = events.OrNop(opts.Events)
	return &Manager{opts: opts, log: opts.Logger, images: newImageTracker(), skipped: map[string]string{}}, nil
}

// Run collects containers every ContainerGCPeriod and images every
// ImageGCPeriod, each first at once, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	containers := func() { m.periodic(ctx, "containers", func() error { return m.CollectContainers(ctx, false) }) }
	images := func() {
		m.periodic(ctx, "images", func() error {
			_, err := m.CollectImages(ctx, 0)
			return err
		})
	}
	containerTicker := time.NewTicker(ContainerGCPeriod)
	defer containerTicker.Stop()
	imageTicker := time.NewTicker(ImageGCPeriod)
	defer imageTicker.Stop()
	containers()
	images()
	for {
		select {
		case <-ctx.Done():
			return
		case <-containerTicker.C:
			containers()
		case <-imageTicker.C:
			images()
		}
	}
}

// periodic runs one periodic collection and logs how it went: a skipped
// cycle in one line, an unconfigured plugin once.
func (m *Manager) periodic(ctx context.Context, what string, collect func() error) {
	err := collect()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recordOutcome(what, err)
	switch {
	case err == nil:
		delete(m.skipped, what)
	case ctx.Err() != nil:
	case errors.Is(err, pluginhost.ErrNotConfigured), errors.Is(err, errUnsupported):
		if m.skipped[what] != err.Error() {
			m.skipped[what] = err.Error()
			m.log.Info("garbage collection of "+what+" is off", "reason", err)
		}
	case errors.Is(err, pluginhost.ErrUnavailable):
		delete(m.skipped, what)
		m.log.Warn("garbage collection of "+what+" skipped this cycle: the imagegc plugin does not serve", "error", err)
	default:
		delete(m.skipped, what)
		m.log.Error("garbage collection of "+what+" failed", "error", err)
	}
}

// errUnsupported: the plugin does not plan this kind of collection.
var errUnsupported = errors.New("the imagegc plugin does not plan this collection")

// HostPlugin reaches the imagegc plugin through the plugin host, looked up
// on every call so that a plugin configured or swapped later is used.
func HostPlugin(host *pluginhost.Host) Plugin {
	return pluginhost.Client[imagegcv1.ImageGCServiceClient]{Slot: host.Kind(pluginhost.ImageGC), New: imagegcv1.NewImageGCServiceClient}
}

// plan calls the plugin, its errors sorted by pluginhost.Classify, and
// UNIMPLEMENTED as errUnsupported.
func (m *Manager) plan(ctx context.Context, what string, fn func(context.Context, imagegcv1.ImageGCServiceClient) error) error {
	_, err := pluginhost.Ask(ctx, m.opts.Plugin, what, func(ctx context.Context, c pluginhost.Conn[imagegcv1.ImageGCServiceClient]) (struct{}, error) {
		return struct{}{}, fn(ctx, c.Client)
	})
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w: %w", errUnsupported, err)
	}
	return err
}
