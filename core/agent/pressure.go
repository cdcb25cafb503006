package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/kinds/eviction"
	"github.com/microlet/microlet/core/kinds/imagegc"
	"github.com/microlet/microlet/core/node/memnotify"
	"github.com/microlet/microlet/core/node/oomwatch"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/runtime/cri"
	"github.com/microlet/microlet/core/runtime/logrotation"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// newPressure builds what keeps the node alive under pressure: garbage
// collection, container log rotation, the OOM watcher and the eviction
// manager, with its kernel memory notifier.
// The sync loop is built afterwards; the adapters reach it through p.
func (a *Agent) newPressure(p *pods, reg prometheus.Registerer) error {
	cfg := a.cfg
	var err error
	if p.gc, err = imagegc.New(imagegc.Options{
		Runtime:          p.cri,
		Plugin:           imagegc.HostPlugin(a.plugins),
		Pods:             gcPods{p: p},
		PodLogsDir:       cfg.PodLogsDir,
		ContainerLogsDir: cfg.ContainerLogsDir,
		Logger:           a.log.Named("gc"),
		Events:           a.recorder,
		NodeName:         cfg.NodeName,
	}); err != nil {
		return err
	}
	maxLogSize, err := logrotation.ParseMaxSize(cfg.ContainerLogMaxSize)
	if err != nil {
		return fmt.Errorf("container_log_max_size: %w", err)
	}
	if p.logs, err = logrotation.New(logrotation.Options{
		Runtime:    p.cri,
		MaxSize:    maxLogSize,
		MaxFiles:   cfg.ContainerLogMaxFiles,
		Interval:   cfg.ContainerLogMonitorInterval,
		Workers:    cfg.ContainerLogMaxWorkers,
		Logger:     a.log.Named("logrotation"),
		Registerer: reg,
	}); err != nil {
		return err
	}
	if p.oom, err = oomwatch.New(oomwatch.Options{Logger: a.log.Named("oomwatch"), Registerer: reg,
		OnSystemOOM: func(victim oomwatch.OOMInstance) {
			a.nodeEvents.Event(v1.EventTypeWarning, oomwatch.SystemOOMReason, victim.Message(p.oomVictimContainer(victim)))
		}}); err != nil {
		a.log.Warn("kernel OOM kills are not reported", "error", err)
	}
	var notifier eviction.Notifier
	if cfg.KernelMemcgNotification {
		n, err := memnotify.New(memnotify.Options{Cgroups: p.cgroupTree, CgroupRoot: cfg.CgroupRoot, Logger: a.log.Named("memnotify")})
		if err != nil {
			a.log.Warn("kernel memory notifications are off; eviction runs on its period only", "error", err)
		} else {
			notifier = n
		}
	}
	p.eviction, err = eviction.New(eviction.Options{
		Plugin:    eviction.HostPlugin(a.plugins),
		Stats:     p.stats,
		Measurer:  &eviction.Measurer{Cgroups: p.cgroupTree, RootDir: cfg.RootDir, ImageFsMount: imageFsMount(p.cri)},
		Pods:      evictionPods{p},
		Reclaimer: p.gc,
		Node: func() *typesv1.Node {
			return state{a}.NodeView()
		},
		Notifier:           notifier,
		MonitoringInterval: cfg.EvictionMonitoringInterval,
		MaxPodsPerCycle:    cfg.EvictionMaxPodsPerCycle,
		Pressure:           &eviction.Pressure{Unified: p.cgroupTree.Unified},
		// 0 in the config is off; 0 in the options is the default.
		PressurePollInterval: pollInterval(cfg.EvictionPressurePollInterval),
		Logger:               a.log.Named("eviction"),
		Registerer:           reg,
		Events:               a.recorder,
		NodeName:             cfg.NodeName,
	})
	return err
}

// pollInterval is the eviction manager's PressurePollInterval for
// eviction_pressure_poll_interval, where 0 means never.
func pollInterval(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// evictionReservation is what the eviction manager holds back for node
// allocatable. The cgroup manager asks only once the pods run, when
// p.eviction exists.
func (p *pods) evictionReservation(ctx context.Context, capacity *typesv1.ResourceList) (*typesv1.ResourceList, error) {
	return p.eviction.Reservation(ctx, capacity)
}

// gcPods tells container GC which pods are gone: no source wants them and
// no pod worker knows them (the status manager drops a pod's status when
// neither holds it any more), and only once every source's pods have
// reached the sync loop, lest a pod not read yet after a restart count as
// deleted.
type gcPods struct{ p *pods }

func (g gcPods) PodDeleted(uid types.UID) bool {
	if !g.p.loop.SourcesReady() {
		return false
	}
	if _, ok := g.p.statuses.GetPodStatus(uid); ok {
		return false
	}
	for _, pod := range g.p.loop.DesiredPods() {
		if pod.UID == uid {
			return false
		}
	}
	return true
}

// evictionPods are the pods as the eviction manager sees and kills them.
type evictionPods struct{ p *pods }

func (e evictionPods) ActivePods() []*v1.Pod { return e.p.loop.ActivePods() }

func (e evictionPods) PodView(pod *v1.Pod) *typesv1.Pod { return e.p.podView(pod) }

func (e evictionPods) PodCgroup(uid types.UID) (string, bool) {
	cgroup, _, ok := e.p.cgroups.PodCgroup(uid)
	return cgroup, ok
}

func (e evictionPods) KillPod(pod *v1.Pod, evict bool, gracePeriod *int64, statusFn podworkers.PodStatusFunc) error {
	return e.p.loop.KillPod(pod, evict, gracePeriod, statusFn)
}

// PodCleanedUp: a terminated pod's cgroup is removed once it is released
// (upstream podResourcesAreReclaimed); a pod without one has nothing to wait for.
func (e evictionPods) PodCleanedUp(uid types.UID) bool {
	_, _, planned := e.p.cgroups.PodCgroup(uid)
	return !planned
}

// imageFsMount is the mount point of the runtime's first image filesystem.
func imageFsMount(c *cri.Client) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		info, err := c.ImageFsInfo(ctx)
		if err != nil {
			return "", err
		}
		for _, fs := range info.GetImageFilesystems() {
			if mount := fs.GetFsId().GetMountpoint(); mount != "" {
				return mount, nil
			}
		}
		return "", errors.New("the runtime reports no image filesystem mount point")
	}
}

// oomVictimContainer names the container an OOM victim ran in,
// "<namespace>/<pod>/<container>", from its cgroup and the pod cache; ""
// for a process of no pod this node knows.
func (p *pods) oomVictimContainer(victim oomwatch.OOMInstance) string {
	uid, id, ok := victim.PodContainer()
	if !ok {
		return ""
	}
	status, err := p.cache.Get(types.UID(uid))
	if err != nil || status == nil {
		return ""
	}
	for _, c := range status.Containers {
		if c.ID == id {
			return status.Namespace + "/" + status.Name + "/" + c.Name
		}
	}
	return ""
}
