package pluginhost

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/version"

	"github.com/microlet/microlet/sdk"
)

// Kind is a plugin kind, as the SDK names it and the wire carries it.
type Kind string

// The plugin kinds: the SDK's one list of names, typed for the core.
const (
	Eviction Kind = sdk.KindEviction
	ImageGC  Kind = sdk.KindImageGC
	Probes   Kind = sdk.KindProbes
	Cgroup   Kind = sdk.KindCgroup
	Devices  Kind = sdk.KindDevices
	Stats    Kind = sdk.KindStats
)

// KindInfo is a kind as the plugin host knows it.
type KindInfo struct {
	Kind Kind
	// Singleton kinds have one slot: configuring a plugin of another name
	// replaces the running one by a hot swap (how an operator switches
	// eviction strategy). Other kinds have one slot per name.
	Singleton bool
	// APIVersions are the versions of the kind's API this core speaks.
	APIVersions []string
	// Capabilities are the optional calls of the kind's API this core
	// makes when a plugin declares them.
	Capabilities []string
	// Fallback is what the core does while the kind has no serving plugin,
	// as operators read it in logs and health; ARCHITECTURE.md's "Failure
	// policy per kind" shows this same text (kinds_test.go checks). The
	// behaviour itself lives with each kind's core component.
	Fallback string
}

// kinds is the one table of plugin kinds, in ARCHITECTURE.md's order.
var kinds = []KindInfo{
	{
		Kind: Cgroup, Singleton: true, APIVersions: []string{"v1"},
		Capabilities: []string{sdk.CapabilityCgroupAdmit},
		Fallback:     "Not configured: pods run without a cgroup parent or resource settings (the runtime's defaults), every pod is admitted. Down: running pods keep their last good plan and cgroups; new pods are neither admitted nor rejected but wait until the plugin is back. CPU manager: exclusive CPUs stay where they are (cpu_manager_state) and the reconcile loop keeps the shared pool as the state says; a terminated pod's CPUs return to the pool without the plugin; no pod is given CPUs without it, as upstream never moves an assigned CPU nor runs a Guaranteed pod in the shared pool. Memory manager: pinned memory stays (memory_manager_state) and returns when its pod ends, without the plugin.",
	},
	{
		Kind: Probes, Singleton: true, APIVersions: []string{"v1"},
		Fallback: "Every container keeps its last verdicts: nothing turns unready or is restarted for want of a result. On return the core resyncs the whole probe set; the new process's verdicts replace the kept ones only once settled. Not configured: containers count as having no probes (ready once running).",
	},
	{
		Kind: Stats, Singleton: true, APIVersions: []string{"v1"},
		Fallback: "The cycle is skipped: `/stats/summary` answers 503 and resource metrics report a scrape error. The eviction manager measures memory and disk itself (root memory cgroup or meminfo, statfs, pod cgroups).",
	},
	{
		Kind: Eviction, Singleton: true, APIVersions: []string{"v1"},
		Capabilities: []string{sdk.CapabilityEvictionAdmit, sdk.CapabilityEvictionReservation},
		Fallback:     "Pressure conditions are kept as they were; a built-in evictor decides: the kubelet strategy's own engine, compiled into the core, with the kubelet's default hard thresholds only (memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%), reclaim first, one pod per cycle. A strategy that serves but answers an error decides nothing that cycle. No pressure stall levels are polled meanwhile: the psi strategy's second opinion is off until a strategy serves again.",
	},
	{
		Kind: ImageGC, Singleton: true, APIVersions: []string{"v1"},
		Capabilities: []string{sdk.CapabilityImageGCImages, sdk.CapabilityImageGCContainers},
		Fallback:     "Image and container GC skip their cycle (one log line); node-level reclaim for eviction reports the plugin unavailable and the strategy goes on to evict. The exited containers of deleted pods are still removed (the sync loop's housekeeping, no plugin needed); their sandboxes wait for the plugin.",
	},
	{
		Kind: Devices, Singleton: false, APIVersions: []string{"v1"},
		Capabilities: []string{sdk.CapabilityDevicesPreferredAllocation, sdk.CapabilityDevicesPreStart},
		Fallback:     "Allocations are kept (they are checkpointed) and containers holding the plugin's devices are created and restarted as before; new pods asking for its resources wait, with a message naming the plugin. Removed from config: its devices turn unhealthy, capacity is kept 5 minutes, then dropped.",
	},
}

// Kinds lists every plugin kind, in ARCHITECTURE.md's order.
func Kinds() []KindInfo { return slices.Clone(kinds) }

// Info is what the host knows of kind; ok is false for a kind it does not
// know.
func (k Kind) Info() (info KindInfo, ok bool) {
	i := slices.IndexFunc(kinds, func(info KindInfo) bool { return info.Kind == k })
	if i < 0 {
		return KindInfo{}, false
	}
	return kinds[i], true
}

// Singleton says whether the kind has one slot (see KindInfo.Singleton).
func (k Kind) Singleton() bool {
	info, _ := k.Info()
	return info.Singleton
}

// Fallback is the kind's fallback text (see KindInfo.Fallback).
func (k Kind) Fallback() string {
	info, _ := k.Info()
	return info.Fallback
}

// chooseAPIVersion picks the highest API version both the core and the
// plugin speak, ordered as Kubernetes orders API versions (v2 > v1 >
// v1beta2 > v1alpha1).
func chooseAPIVersion(kind Kind, core, plugin []string) (string, error) {
	best := ""
	for _, v := range core {
		if !slices.Contains(plugin, v) {
			continue
		}
		if best == "" || version.CompareKubeAwareVersionStrings(v, best) > 0 {
			best = v
		}
	}
	if best == "" {
		return "", fmt.Errorf("the plugin serves %s API versions %v but this core speaks %v: no version in common", kind, plugin, core)
	}
	return best, nil
}
