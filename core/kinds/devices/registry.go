package devices

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// deviceResource is one extended resource a devices plugin offers: its
// devices with their health, and its owner, the plugin that offered it.
type deviceResource struct {
	owner               string
	devices             map[string]*devicesv1.Device
	preStartRequired    bool
	preferredAllocation bool
	// stoppedAt is when the resource lost its plugin: the plugin's slot
	// was removed, or the core restarted and the plugin has not reported
	// since. Zero while the plugin offers it. A plugin that is down
	// (restarting) keeps its resources as they were.
	stoppedAt time.Time
}

func (r *deviceResource) stopped() bool { return !r.stoppedAt.IsZero() }

// healthy are the IDs of the resource's healthy devices, sorted.
func (r *deviceResource) healthy() []string {
	var out []string
	for id, d := range r.devices {
		if d.GetHealthy() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// isExtendedResource says whether name is an extended resource
// (upstream v1helper.IsExtendedResourceName): domain-qualified, outside
// kubernetes.io, and valid as a quota name.
func isExtendedResource(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/") || strings.HasPrefix(name, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+name)) == 0
}

// checkResource says what is wrong with a resource a plugin reported.
func checkResource(r *devicesv1.Resource) error {
	if !isExtendedResource(r.GetName()) {
		return fmt.Errorf("%q is not an extended resource name (expected <domain>/<name> outside kubernetes.io, such as \"vendor.example/gpu\")", r.GetName())
	}
	ids := sets.New[string]()
	for _, d := range r.GetDevices() {
		switch {
		case d.GetId() == "":
			return fmt.Errorf("resource %s has a device without an ID", r.GetName())
		case ids.Has(d.GetId()):
			return fmt.Errorf("resource %s lists device %q twice", r.GetName(), d.GetId())
		}
		ids.Insert(d.GetId())
	}
	return nil
}

// update applies a ListAndWatch message of the plugin watched as st: its
// resources replace what it offered before, and a resource it no longer
// lists is dropped. A resource restored from the checkpoint that it does
// not list (yet: an upstream plugin behind the bridge registers again
// after a restart) waits for it until the grace period ends. A resource
// another plugin offers stays with that plugin. A message that arrives
// after the plugin's slot was removed is ignored.
func (m *Manager) update(plugin string, st *pluginState, wire []*devicesv1.Resource) {
	offered := map[string]*devicesv1.Resource{}
	for _, r := range wire {
		if err := checkResource(r); err != nil {
			m.log.Error("device plugin reported an invalid resource; ignoring it", "plugin", pluginName(plugin), "error", err)
			continue
		}
		if _, dup := offered[r.GetName()]; dup {
			m.log.Error("device plugin reported a resource twice; using the first", "plugin", pluginName(plugin), "resource", r.GetName())
			continue
		}
		offered[r.GetName()] = r
	}

	m.mu.Lock()
	if m.plugins[plugin] != st {
		m.mu.Unlock()
		return
	}
	for name, r := range m.resources {
		if _, still := offered[name]; r.owner == plugin && !still && !r.stopped() {
			delete(m.resources, name)
			m.log.Info("device plugin no longer offers a resource", "plugin", pluginName(plugin), "resource", name)
		}
	}
	for name, r := range offered {
		current := m.resources[name]
		if current != nil && current.owner != plugin && !current.stopped() {
			if key := plugin + " " + name; !m.conflicts.Has(key) {
				m.conflicts.Insert(key)
				m.log.Warn("two device plugins offer the same resource; it stays with the first",
					"resource", name, "served_by", pluginName(current.owner), "ignored", pluginName(plugin))
			}
			continue
		}
		if current == nil || current.owner != plugin || current.stopped() {
			m.metrics.registrations.WithLabelValues(name).Inc()
		}
		devices := make(map[string]*devicesv1.Device, len(r.GetDevices()))
		for _, d := range r.GetDevices() {
			devices[d.GetId()] = d
		}
		m.resources[name] = &deviceResource{owner: plugin, devices: devices,
			preStartRequired: r.GetPreStartRequired(), preferredAllocation: r.GetPreferredAllocationAvailable()}
	}
	st.reported, st.serving, st.lastErr = true, true, nil
	m.mu.Unlock()
	// A failure is logged; the next change writes the checkpoint again.
	_ = m.writeCheckpoint()
}

// pluginRemovedLocked marks the resources of a plugin no longer
// configured: their devices unhealthy, their capacity kept for the grace
// period, as upstream keeps a stopped endpoint's.
func (m *Manager) pluginRemovedLocked(plugin string) {
	for name, r := range m.resources {
		if r.owner != plugin || r.stopped() {
			continue
		}
		r.stoppedAt = m.now()
		unhealthy := make(map[string]*devicesv1.Device, len(r.devices))
		for id, d := range r.devices {
			unhealthy[id] = &devicesv1.Device{Id: id, NumaNodes: d.GetNumaNodes()}
		}
		r.devices = unhealthy
		m.log.Info("device plugin removed; its resource is unhealthy until the grace period ends", "plugin", pluginName(plugin),
			"resource", name, "grace_period", m.grace.String())
	}
}

// expire drops resources whose plugin has been gone for the grace period.
func (m *Manager) expire() {
	m.mu.Lock()
	var dropped []string
	for name, r := range m.resources {
		if r.stopped() && m.now().Sub(r.stoppedAt) > m.grace {
			delete(m.resources, name)
			dropped = append(dropped, name)
		}
	}
	m.mu.Unlock()
	if len(dropped) == 0 {
		return
	}
	m.log.Info("resources without a device plugin for the grace period are dropped", "resources", dropped, "grace_period", m.grace.String())
	// A failure is logged; the next change writes the checkpoint again.
	_ = m.writeCheckpoint()
}

// Capacity is every device of each extended resource the devices plugins
// offer (upstream GetCapacity), for node status.
func (m *Manager) Capacity() v1.ResourceList {
	return m.resourceList(func(r *deviceResource) int { return len(r.devices) })
}

// Allocatable is the healthy devices of each extended resource, for node
// status.
func (m *Manager) Allocatable() v1.ResourceList {
	return m.resourceList(func(r *deviceResource) int { return len(r.healthy()) })
}

func (m *Manager) resourceList(count func(*deviceResource) int) v1.ResourceList {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := v1.ResourceList{}
	for name, r := range m.resources {
		out[v1.ResourceName(name)] = *resource.NewQuantity(int64(count(r)), resource.DecimalSI)
	}
	return out
}
