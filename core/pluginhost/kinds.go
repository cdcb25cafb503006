package pluginhost

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/version"
)

// KindInfo is what the core knows about a plugin kind.
type KindInfo struct {
	// Singleton kinds have one slot: configuring a plugin of another name
	// replaces the running one by a hot swap (how an operator switches
	// eviction strategy). Other kinds have one slot per name.
	Singleton bool
	// APIVersions are the versions of the kind's API this core speaks.
	APIVersions []string
	// Fallback is what the core does while the kind has no serving plugin.
	// The behaviour itself lives with each kind's core component.
	Fallback string
}

// Kinds is the core's knowledge of each plugin kind, by kind name.
var Kinds = map[string]KindInfo{
	"eviction": {
		Singleton:   true,
		APIVersions: []string{"v1"},
		Fallback:    "the core evicts by the kubelet's default hard thresholds (memory.available<100Mi, nodefs.available<10%, imagefs.available<15%, nodefs.inodesFree<5%)",
	},
	"imagegc": {
		Singleton:   true,
		APIVersions: []string{"v1"},
		Fallback:    "image and container garbage collection skip their cycle",
	},
	"probes": {
		Singleton:   true,
		APIVersions: []string{"v1"},
		Fallback:    "every container keeps its last probe result; no pod is marked unready or restarted for want of a result",
	},
	"cgroup": {
		Singleton:   true,
		APIVersions: []string{"v1"},
		Fallback:    "running pods keep their last good cgroup plan; new pods are not admitted",
	},
	"devices": {
		Singleton:   false,
		APIVersions: []string{"v1"},
		Fallback:    "existing device allocations are kept; pods asking for the plugin's resources are not admitted",
	},
	"stats": {
		Singleton:   true,
		APIVersions: []string{"v1"},
		Fallback:    "stats collection skips its cycle: /stats/summary answers 503 and resource metrics report a scrape error",
	},
}

// knownKinds lists Kinds' names, sorted, for error messages.
func knownKinds() []string {
	names := make([]string, 0, len(Kinds))
	for name := range Kinds {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// chooseAPIVersion picks the highest API version both the core and the
// plugin speak, ordered as Kubernetes orders API versions (v2 > v1 >
// v1beta2 > v1alpha1).
func chooseAPIVersion(kind string, core, plugin []string) (string, error) {
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
