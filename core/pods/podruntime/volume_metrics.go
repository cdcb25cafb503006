package podruntime

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Upstream's names for the volume operations microlet performs
// (pkg/volume/util/operationexecutor) and their outcomes (pkg/volume/util).
const (
	opVolumeMount   = "volume_mount"
	opVolumeUnmount = "volume_unmount"
	statusSuccess   = "success"
	statusFail      = "fail-unknown"
	// stateDesired and stateActual are volume_manager_total_volumes' states.
	stateDesired = "desired_state_of_world"
	stateActual  = "actual_state_of_world"
	// pluginUnknown is upstream's plugin name for a volume no plugin serves.
	pluginUnknown = "N/A"
)

var totalVolumesDesc = prometheus.NewDesc("volume_manager_total_volumes",
	"[ALPHA] Number of volumes in Volume Manager", []string{"plugin_name", "state"}, nil)

// volumePlugin is the kubelet's name of the plugin that serves vol
// (kubernetes.io/empty-dir, ...), pluginUnknown for a kind microlet does
// not set up.
func volumePlugin(vol *v1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return "kubernetes.io/empty-dir"
	case vol.HostPath != nil:
		return "kubernetes.io/host-path"
	}
	if dir := projectedPluginDirOf(vol); dir != "" {
		return strings.Replace(dir, "~", "/", 1)
	}
	return pluginUnknown
}

// volumeBook is what the kubelet's volume manager counts in
// volume_manager_total_volumes: the volumes of the pods being run
// (desired) and those set up (actual), by plugin, until the pod's
// teardown; and the time each mount and unmount took.
type volumeBook struct {
	operations *prometheus.HistogramVec
	mu         sync.Mutex
	desired    map[types.UID]map[string]string // volume name -> plugin
	actual     map[types.UID]map[string]string
}

func newVolumeBook() *volumeBook {
	operations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "storage_operation_duration_seconds",
		Help:    "[ALPHA] Storage operation duration",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600},
	}, []string{"volume_plugin", "operation_name", "status", "migrated"})
	return &volumeBook{operations: operations,
		desired: map[types.UID]map[string]string{}, actual: map[types.UID]map[string]string{}}
}

// want records the pod's volumes as desired.
func (b *volumeBook) want(pod *v1.Pod) {
	vols := make(map[string]string, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = volumePlugin(&pod.Spec.Volumes[i])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.desired[pod.UID] = vols
}

// mounted says whether the pod's volume is set up.
func (b *volumeBook) mounted(uid types.UID, name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.actual[uid][name]
	return ok
}

// mount records a set-up of the pod's volume that began at start.
func (b *volumeBook) mount(pod *v1.Pod, vol *v1.Volume, start time.Time, err error) {
	plugin := volumePlugin(vol)
	b.observe(plugin, opVolumeMount, start, err)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.actual[pod.UID] == nil {
		b.actual[pod.UID] = map[string]string{}
	}
	b.actual[pod.UID][vol.Name] = plugin
}

// unmount records the pod's teardown, begun at start: every volume set up
// was unmounted with it, and none is desired any more once it succeeded.
func (b *volumeBook) unmount(uid types.UID, start time.Time, err error) {
	b.mu.Lock()
	plugins := b.actual[uid]
	if err == nil {
		delete(b.actual, uid)
		delete(b.desired, uid)
	}
	b.mu.Unlock()
	for _, plugin := range plugins {
		b.observe(plugin, opVolumeUnmount, start, err)
	}
}

func (b *volumeBook) observe(plugin, operation string, start time.Time, err error) {
	status := statusSuccess
	if err != nil {
		status = statusFail
	}
	b.operations.WithLabelValues(plugin, operation, status, "false").Observe(time.Since(start).Seconds())
}

func (b *volumeBook) Describe(ch chan<- *prometheus.Desc) {
	b.operations.Describe(ch)
	ch <- totalVolumesDesc
}

func (b *volumeBook) Collect(ch chan<- prometheus.Metric) {
	b.operations.Collect(ch)
	b.mu.Lock()
	defer b.mu.Unlock()
	for state, pods := range map[string]map[types.UID]map[string]string{stateDesired: b.desired, stateActual: b.actual} {
		counts := map[string]int{}
		for _, vols := range pods {
			for _, plugin := range vols {
				counts[plugin]++
			}
		}
		for plugin, n := range counts {
			ch <- prometheus.MustNewConstMetric(totalVolumesDesc, prometheus.GaugeValue, float64(n), plugin, state)
		}
	}
}
