package podruntime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/runtime/cri"
)

// Options configure a Manager.
type Options struct {
	// CRI is the runtime the pods run on.
	CRI *cri.Client
	// NodeName is the node's name (spec.nodeName for the downward API).
	NodeName string
	// NodeIPs are the node's addresses, primary first: status.hostIP(s) in
	// the environment, and the pod IPs of hostNetwork pods.
	NodeIPs []string
	// RootDir holds the per-pod directories: <RootDir>/pods/<uid>/{volumes,
	// containers,etc-hosts}.
	RootDir string
	// PodLogsDir holds the pods' log directories (the kubelet's
	// /var/log/pods): <PodLogsDir>/<namespace>_<name>_<uid>.
	PodLogsDir string
	// ContainerLogsDir gets the kubelet's symlinks to container logs (its
	// /var/log/containers); "" makes none.
	ContainerLogsDir string
	// DNS is the cluster DNS configuration pods get.
	DNS DNSConfig
	// SeccompDefault gives containers that name no seccomp profile the
	// runtime's default instead of Unconfined (the kubelet's seccompDefault).
	SeccompDefault bool
	// Resources decides pods' cgroup parent and container resources; nil:
	// no cgroup parent and no resource settings. One that is also a
	// PodResizer resizes running pods in place.
	Resources ResourcePlanner
	// Resizes records what running containers were given, for in-place
	// resize; nil: running containers are never resized.
	Resizes ResizeTracker
	// ContainerOptions adds device allocations to containers; nil: none.
	ContainerOptions ContainerOptionsProvider
	// NodeAllocatable is what pods may use on the node, for resourceFieldRef
	// limits of containers that set none and for the size of memory-backed
	// emptyDirs, as upstream; nil: the machine's CPUs and memory.
	NodeAllocatable func() v1.ResourceList
	// VolumeSources reads the API objects configMap, secret and projected
	// volumes show, and the configMaps and secrets containers' env and
	// envFrom name; nil on a standalone node, where containers mounting
	// such volumes fail with CreateContainerConfigError and the reason.
	VolumeSources VolumeSources
	// Services are the cluster's Services, for the service variables of
	// containers' environments; nil on a standalone node: none.
	Services ServiceLister
	// PullCredentials finds image pull credentials; nil pulls without any.
	PullCredentials PullCredentials
	// MaxParallelImagePulls bounds concurrent pulls: 0 or 1 serializes them
	// (the kubelet's serializeImagePulls default), n > 1 allows n at once.
	MaxParallelImagePulls int
	Logger                hclog.Logger
	// Events records the kubelet's pod and container events (pulls,
	// creation, start, kill, backoff, sandbox, hooks); nil records none.
	Events events.Recorder
	// Registerer gets the manager's metrics (upstream's kubelet_started_*
	// and kubelet_image_pull_duration_seconds); nil registers none.
	Registerer prometheus.Registerer
	// Clock is the time backoffs are computed with; nil is time.Now.
	Clock func() time.Time
}

// DNSConfig is the node's DNS configuration for pods, as the kubelet's
// clusterDNS, clusterDomain and resolvConf.
type DNSConfig struct {
	// ClusterDNS are the cluster's DNS servers, for dnsPolicy ClusterFirst.
	ClusterDNS []string
	// ClusterDomain is the cluster's domain ("cluster.local"); "" adds no
	// cluster search paths.
	ClusterDomain string
	// ResolvConf is the resolver configuration pods with dnsPolicy Default
	// inherit (usually /etc/resolv.conf); "" gives them the node's loopback
	// resolver, as upstream.
	ResolvConf string
}

// ResourcePlanner decides a pod's cgroup parent and container resources
// (the core's cgroup component, backed by the cgroup plugin, implements it).
type ResourcePlanner interface {
	PlanPod(ctx context.Context, pod *v1.Pod) (*ResourcePlan, error)
}

// ContainerCreatedNotifier is a ResourcePlanner told of each container
// created, before it starts: upstream's PreStartContainer of the resource
// managers, where the memory manager releases the memory of the init
// containers that ended.
type ContainerCreatedNotifier interface {
	ContainerCreated(pod *v1.Pod, c *v1.Container)
}

// ResourcePlan is where a pod's cgroup goes and what its containers get.
type ResourcePlan struct {
	CgroupParent string
	// Containers are the resources of each container by name (init and
	// regular); a container not in the map gets none.
	Containers map[string]*runtimeapi.LinuxContainerResources
	// Sandbox are the pod-level resources handed to the runtime with the
	// sandbox (upstream's applySandboxResources); nil: none.
	Sandbox *runtimeapi.LinuxContainerResources
}

// ContainerOptionsProvider adds what device plugins allocated to a
// container's config.
type ContainerOptionsProvider interface {
	ContainerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container) (*ContainerOptions, error)
}

// ContainerOptions are device allocations for one container. The
// container's own environment wins over Envs, and the kubelet's annotations
// over Annotations, as upstream.
type ContainerOptions struct {
	Envs        map[string]string
	Mounts      []*runtimeapi.Mount
	Devices     []*runtimeapi.Device
	Annotations map[string]string
	CDIDevices  []*runtimeapi.CDIDevice
}

// ProbeResults is what probes decided about container instances (nil: no
// probes).
type ProbeResults interface {
	// ShouldRestart reports whether the instance must be killed and
	// restarted per restartPolicy because its liveness or startup probe
	// failed, with a message for the user; gracePeriod is the probe-level
	// terminationGracePeriodSeconds if set.
	ShouldRestart(containerID string) (restart bool, message string, gracePeriod *int64)
	// Started reports whether the instance's startup probe has succeeded
	// (true when it has none).
	Started(containerID string) bool
}

// Manager makes pods' sandboxes and containers on the runtime match their
// specs. It is safe for concurrent use by the pod workers, one call at a
// time per pod.
type Manager struct {
	cri     *cri.Client
	opts    Options
	log     hclog.Logger
	now     func() time.Time
	nodeIPs []net.IP

	events    events.Recorder
	crashLoop *backoff
	images    *imagePuller
	hooks     *hookRunner
	dns       *dnsConfigurer
	volumes   *volumeManager
	metrics   *metrics
	stopSlots stopSlots
}

// New makes a Manager and the directories it writes to.
func New(opts Options) (*Manager, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return newManager(opts)
}

// newManager makes a Manager from valid options, filling in defaults.
func newManager(opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	opts.Events = events.OrNop(opts.Events)
	if opts.NodeAllocatable == nil {
		opts.NodeAllocatable = machineCapacity
	}
	nodeIPs, _ := parseIPs(opts.NodeIPs) // validated
	clusterDNS, _ := parseIPs(opts.DNS.ClusterDNS)
	for _, dir := range []string{filepath.Join(opts.RootDir, podsDirName), opts.PodLogsDir, opts.ContainerLogsDir} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("podruntime: creating %s: %w", dir, err)
		}
	}
	met, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	log := opts.Logger.Named("podruntime")
	m := &Manager{
		cri:       opts.CRI,
		opts:      opts,
		log:       log,
		now:       opts.Clock,
		nodeIPs:   nodeIPs,
		events:    opts.Events,
		crashLoop: newBackoff(containerBackOffPeriod, maxContainerBackOff, opts.Clock),
		dns:       &dnsConfigurer{clusterDNS: clusterDNS, clusterDomain: opts.DNS.ClusterDomain, resolvConf: opts.DNS.ResolvConf, nodeIPs: nodeIPs, log: log, events: opts.Events, nodeRef: events.NodeRef(opts.NodeName)},
		volumes:   newVolumeManager(opts.RootDir, opts.NodeAllocatable, opts.VolumeSources, opts.Events, opts.Clock),
		metrics:   met,
		stopSlots: newStopSlots(),
	}
	if opts.Registerer != nil {
		if m.volumes.book, err = registerOrReuse(opts.Registerer, m.volumes.book); err != nil {
			return nil, fmt.Errorf("podruntime: registering volume metrics: %w", err)
		}
	}
	m.images = newImagePuller(opts.CRI, opts.PullCredentials, opts.Events, opts.MaxParallelImagePulls, opts.Clock, met, log)
	m.hooks = newHookRunner(opts.CRI)
	m.dns.checkResolvConfLimits()
	return m, nil
}

func (o *Options) validate() error {
	var errs []error
	if o.CRI == nil {
		errs = append(errs, errors.New("CRI: a runtime client is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("NodeName: the node's name is required"))
	}
	for _, d := range []struct{ field, value string }{{"RootDir", o.RootDir}, {"PodLogsDir", o.PodLogsDir}} {
		if !filepath.IsAbs(d.value) {
			errs = append(errs, fmt.Errorf("%s: %q is not an absolute path", d.field, d.value))
		}
	}
	if o.ContainerLogsDir != "" && !filepath.IsAbs(o.ContainerLogsDir) {
		errs = append(errs, fmt.Errorf("ContainerLogsDir: %q is not an absolute path (or empty for none)", o.ContainerLogsDir))
	}
	if _, err := parseIPs(o.NodeIPs); err != nil {
		errs = append(errs, fmt.Errorf("NodeIPs: %w", err))
	}
	if _, err := parseIPs(o.DNS.ClusterDNS); err != nil {
		errs = append(errs, fmt.Errorf("DNS.ClusterDNS: %w", err))
	}
	if o.MaxParallelImagePulls < 0 {
		errs = append(errs, fmt.Errorf("MaxParallelImagePulls: %d is negative; want 0 or 1 to serialize pulls, or the number allowed at once", o.MaxParallelImagePulls))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("podruntime: invalid options: %w", err)
	}
	return nil
}

// parseIPs parses IP addresses, naming the first that is not one.
func parseIPs(addrs []string) ([]net.IP, error) {
	ips := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			return nil, fmt.Errorf("%q is not an IP address", a)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// podFullName is how the kubelet names a pod in messages: name_namespace(uid).
func podFullName(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
