package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/kinds/cgroup"
	"github.com/microlet/microlet/core/kinds/devices"
	"github.com/microlet/microlet/core/kinds/eviction"
	"github.com/microlet/microlet/core/kinds/imagegc"
	"github.com/microlet/microlet/core/kinds/probes"
	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/core/node/network"
	"github.com/microlet/microlet/core/node/oomwatch"
	"github.com/microlet/microlet/core/node/shutdown"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/pleg"
	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/resize"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/pods/syncloop"
	"github.com/microlet/microlet/core/runtime/cri"
	"github.com/microlet/microlet/core/runtime/logrotation"
)

// pods is everything that runs pods: the runtime client, the sources, the
// runtime manager, PLEG, status and the sync loop.
type pods struct {
	cri        *cri.Client
	poller     *cri.StatusPoller
	health     *nodeHealth
	config     *podconfig.PodConfig
	capacity   *machine.Capacity
	identity   machine.Identity
	nodeIPs    []string
	cgroupTree *machine.Cgroups
	cgroups    *cgroup.Manager
	devices    *devices.Manager
	prober     *probes.Manager
	stats      *stats.Provider
	gc         *imagegc.Manager
	logs       *logrotation.Manager
	// oom is nil when the kernel log cannot be read (not root).
	oom      *oomwatch.Watcher
	eviction *eviction.Manager
	// shutdown is graceful node shutdown; off (Enabled false) unless a
	// grace period is configured.
	shutdown *shutdown.Manager
	// statusKick asks the node status updater for a sync at once.
	statusKick chan struct{}
	runtime    *podruntime.Manager
	cache      *podcache.Cache
	pleg       *pleg.PLEG
	statuses   *status.Manager
	loop       *syncloop.Loop
	// api is the pod side of a cluster node; nil when standalone.
	api *apiPods
}

// newPods connects to the runtime (waiting for it, as the kubelet does) and
// builds the pod machinery; run starts it.
func (a *Agent) newPods(ctx context.Context, reg prometheus.Registerer, c *cluster) (*pods, error) {
	cfg := a.cfg
	client, err := cri.Connect(ctx, cri.Config{
		RuntimeEndpoint: cfg.ContainerRuntimeEndpoint,
		ImageEndpoint:   cfg.ImageServiceEndpoint,
		RequestTimeout:  cfg.RuntimeRequestTimeout,
		Metrics:         reg,
	}, a.log)
	if err != nil {
		return nil, fmt.Errorf("container runtime: %w", err)
	}
	v := client.RuntimeVersion()
	a.log.Info("container runtime", "name", v.GetRuntimeName(), "version", v.GetRuntimeVersion(),
		"cri", v.GetRuntimeApiVersion(), "events", client.SupportsEvents())

	nodeIPs, err := nodeIPs(cfg.NodeIP)
	if err != nil {
		return nil, err
	}
	if cfg.CNIBridgeConfig {
		wrote, err := network.WriteBridgeConfig(cfg.CNIConfDir, cfg.PodCIDR, network.BridgeName)
		if err != nil {
			return nil, fmt.Errorf("cni_bridge_config: %w", err)
		}
		if wrote {
			a.log.Info("wrote a bridge network for pod_cidr", "file", filepath.Join(cfg.CNIConfDir, network.BridgeConfigFile),
				"pod_cidr", cfg.PodCIDR, "bridge", network.BridgeName)
		}
	}
	p := &pods{cri: client, poller: cri.NewStatusPoller(client, cri.DefaultStatusPollInterval), cache: podcache.New(), nodeIPs: nodeIPs,
		statusKick: make(chan struct{}, 1)}
	p.health = newNodeHealth(p.poller, cfg.CNIConfDir, cfg.CNIBinDirs)
	if err := a.newNodeResources(p, reg); err != nil {
		return nil, err
	}
	if p.devices, err = devices.New(devices.Options{
		Plugins:    devices.HostSlots(a.plugins),
		RootDir:    cfg.RootDir,
		Logger:     a.log.Named("devices"),
		Registerer: reg,
		// The cgroup admitter runs first and leaves the topology
		// manager's affinity for the devices admitter.
		Affinity: p.cgroups.ContainerAffinity,
	}); err != nil {
		return nil, err
	}
	if err := a.newProber(p, nodeIPs); err != nil {
		return nil, err
	}
	p.stats = stats.New(stats.HostPlugin(a.plugins), a.log.Named("stats"))

	sources, err := a.newSources(reg)
	if err != nil {
		return nil, err
	}
	if p.api, err = a.newAPIPods(c); err != nil {
		return nil, err
	}
	if p.api != nil {
		sources = append(sources, p.api.source)
	}
	if p.config, err = podconfig.New(a.log.Named("podconfig"), sources...); err != nil {
		return nil, err
	}
	if err := a.newPressure(p, reg); err != nil {
		return nil, err
	}
	if p.shutdown, err = a.newShutdown(p, reg); err != nil {
		return nil, err
	}
	security, err := newSecurityAdmitter(cfg.AllowedUnsafeSysctls, p.identity.KernelVersion, p.poller)
	if err != nil {
		return nil, err
	}
	admitters := []syncloop.Admitter{p.shutdown, p.eviction, security}
	if p.api != nil {
		admitters = append(admitters, p.api.admitter)
	}

	volumeSources := c.volumeSources(cfg.SyncFrequency)
	pullCreds, err := pullCredentials(cfg, volumeSources, reg)
	if err != nil {
		return nil, err
	}
	resizes := resize.New(a.recorder)
	resizes.StaticCPUPolicy = p.cgroups.StaticCPUPolicy
	resizes.StaticMemoryPolicy = p.cgroups.StaticMemoryPolicy
	p.runtime, err = podruntime.New(podruntime.Options{
		CRI:                   client,
		NodeName:              cfg.NodeName,
		NodeIPs:               nodeIPs,
		RootDir:               cfg.RootDir,
		PodLogsDir:            cfg.PodLogsDir,
		ContainerLogsDir:      cfg.ContainerLogsDir,
		DNS:                   podruntime.DNSConfig{ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, ResolvConf: cfg.ResolvConf},
		SeccompDefault:        cfg.SeccompDefault,
		Resources:             p.cgroups,
		Resizes:               resizes,
		ContainerOptions:      p.devices,
		NodeAllocatable:       p.cgroups.Allocatable,
		VolumeSources:         volumeSources,
		Services:              p.api.serviceLister(),
		PullCredentials:       pullCreds,
		MaxParallelImagePulls: parallelImagePulls(cfg),
		Events:                a.recorder,
		Logger:                a.log.Named("runtime"),
		Registerer:            reg,
	})
	if err != nil {
		return nil, err
	}

	p.pleg, err = pleg.New(pleg.Config{
		Runtime:     p.runtime,
		Cache:       p.cache,
		Events:      pleg.NewCRIEventSource(client),
		EventStatus: p.runtime,
		Log:         a.log.Named("pleg"),
		Registerer:  reg,
	})
	if err != nil {
		return nil, err
	}

	reasons := status.NewReasonCache()
	p.statuses = status.NewManager(a.log.Named("status"), nil)
	generator := &status.Generator{RuntimeName: v.GetRuntimeName(), NodeIPs: nodeIPs, Reasons: reasons, Resizes: resizes}
	generator.ShouldEvict = syncloop.ActiveDeadline(p.statuses, a.recorder)
	loopOpts := syncloop.Options{
		Config:       p.config,
		Runtime:      p.runtime,
		Events:       p.pleg,
		Cache:        p.cache,
		Statuses:     p.statuses,
		Reasons:      reasons,
		Generator:    generator,
		Health:       p.health,
		Admitters:    append(admitters, cgroupAdmitter{p.cgroups}, cpuAdmitter{p.cgroups}, p.devices), // devices last: it allocates
		Releasers:    []syncloop.Releaser{cgroupReleaser{p.cgroups}, p.devices, resizes},
		Resizes:      resizes,
		Allocatable:  p.cgroups.Allocatable,
		OnActivePods: p.onActivePods,
		MaxPods:      cfg.MaxPods,

		SyncFrequency: cfg.SyncFrequency,
		Logger:        a.log.Named("syncloop"),
		Registerer:    reg,
		Recorder:      a.recorder,
	}
	if p.prober != nil {
		loopOpts.Prober = p.prober
		loopOpts.ProbeUpdates = probeUpdates(ctx, p.prober)
		generator.Readiness = probeVerdicts{m: p.prober}
		generator.Startup = probeVerdicts{m: p.prober, startup: true}
	}
	if p.loop, err = syncloop.New(loopOpts); err != nil {
		return nil, err
	}
	return p, nil
}

// newNodeResources reads the machine and builds the cgroup manager, which
// plans pods' resources through the cgroup plugin and applies them.
func (a *Agent) newNodeResources(p *pods, reg prometheus.Registerer) error {
	cfg := a.cfg
	var err error
	if p.capacity, err = machine.ReadCapacity(machine.Options{RootDir: cfg.RootDir, MaxPods: cfg.MaxPods}); err != nil {
		return fmt.Errorf("machine capacity: %w", err)
	}
	p.identity = machine.ReadIdentity(machine.Options{})
	if p.cgroupTree, err = machine.DetectCgroups(); err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	p.cgroups, err = cgroup.New(cgroup.Options{
		Plugin:              cgroup.HostPlugin(a.plugins),
		Capacity:            p.capacity,
		Cgroups:             p.cgroupTree,
		NodeName:            cfg.NodeName,
		RootDir:             cfg.RootDir,
		CgroupRoot:          cfg.CgroupRoot,
		CgroupDriver:        cfg.CgroupDriver,
		EvictionReservation: p.evictionReservation,
		Runtime:             p.cri,
		CPUReconcilePeriod:  cfg.CPUManagerReconcilePeriod,
		Devices:             func(resource string) ([]cgroup.Device, bool) { return deviceTopology(p.devices, resource) },
		Registerer:          reg,
		Logger:              a.log.Named("cgroups"),
		NodeEvents:          a.nodeEvents,
	})
	return err
}

// newProber builds the prober when a probes plugin is configured. Without
// one, readiness follows whether containers run, as for containers with no
// probes.
func (a *Agent) newProber(p *pods, nodeIPs []string) error {
	if !a.configured(pluginhost.Probes) {
		return nil
	}
	var err error
	p.prober, err = probes.New(probes.Options{
		Plugin:      a.plugins.Kind(pluginhost.Probes),
		NodeIPs:     nodeIPs,
		CallTimeout: a.cfg.PluginHost.CallTimeout,
		Registerer:  a.probeMetrics,
		Logger:      a.log.Named("prober"),
		Events:      a.recorder,
	})
	return err
}

// run starts the pod machinery; it stops when ctx ends. The pods keep
// running.
func (p *pods) run(ctx context.Context) {
	go p.poller.Run(ctx)
	go p.cgroups.Run(ctx)
	go p.devices.Run(ctx)
	if p.prober != nil {
		go p.prober.Run(ctx)
	}
	go p.health.run(ctx)
	go p.config.Run(ctx)
	go p.pleg.Run(ctx)
	go p.loop.Run(ctx)
	go p.gc.Run(ctx)
	go p.logs.Run(ctx)
	if p.oom != nil {
		go p.oom.Run(ctx)
	}
	go func() {
		select {
		case <-p.cgroups.NodeTried():
			p.eviction.Run(ctx)
		case <-ctx.Done():
		}
	}()
	if p.api != nil {
		p.api.start(ctx, p)
	}
}

// onActivePods follows the active pods with node-level resources. The loop
// calls it once every source has delivered its pods, which is when the
// devices of pods removed while the core was down can be released.
func (p *pods) onActivePods(ctx context.Context, active []*v1.Pod) error {
	return errors.Join(p.devices.ReleaseStale(p.loop.DesiredPods()), p.cgroups.UpdatePods(ctx, active))
}

// newSources makes the configured pod sources: the static pod path and URL
// when set, and always the local push endpoint.
func (a *Agent) newSources(reg prometheus.Registerer) ([]podsource.Source, error) {
	cfg := a.cfg
	var sources []podsource.Source
	if cfg.StaticPodPath != "" {
		s, err := podsource.NewFile(podsource.FileConfig{Path: cfg.StaticPodPath, CheckFrequency: cfg.FileCheckFrequency, NodeName: cfg.NodeName},
			a.log, reg)
		if err != nil {
			return nil, err
		}
		sources = append(sources, s)
	}
	if cfg.StaticPodURL != "" {
		s, err := podsource.NewHTTP(podsource.HTTPConfig{URL: cfg.StaticPodURL, Header: cfg.StaticPodURLHeader, CheckFrequency: cfg.HTTPCheckFrequency, NodeName: cfg.NodeName},
			a.log, reg)
		if err != nil {
			return nil, err
		}
		sources = append(sources, s)
	}
	push, err := podsource.NewPush(podsource.PushConfig{
		SocketPath: cfg.PodPushSocket,
		StatePath:  filepath.Join(cfg.RootDir, "pushed-pods.json"),
		NodeName:   cfg.NodeName,
	}, a.log)
	if err != nil {
		return nil, err
	}
	a.log.Info("pod push endpoint", "socket", cfg.PodPushSocket)
	sources = append(sources, push)
	return sources, nil
}

// nodeIPs are the configured node addresses, or the address of the
// interface of the default route (upstream's choice).
func nodeIPs(configured string) ([]string, error) {
	if configured != "" {
		return strings.Split(configured, ","), nil
	}
	ip, err := utilnet.ChooseHostInterface()
	if err != nil {
		return nil, fmt.Errorf("cannot find the node's address (set node_ip): %w", err)
	}
	return []string{ip.String()}, nil
}

// parallelImagePulls maps the kubelet's two settings to the runtime
// manager's one bound.
func parallelImagePulls(cfg *config.Config) int {
	switch {
	case cfg.SerializeImagePulls:
		return 1
	case cfg.MaxParallelImagePulls == 0:
		return math.MaxInt32 // no limit
	default:
		return cfg.MaxParallelImagePulls
	}
}
