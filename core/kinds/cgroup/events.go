package cgroup

import "errors"

// recordEnforcement records upstream's node allocatable events until the
// node's cgroups are first applied (the caller holds nodeMu): a
// FailedNodeAllocatableEnforcement for each failed attempt, then one
// NodeAllocatableEnforced, as the kubelet's container manager does at
// start-up while it retries the pods' cgroup.
func (m *Manager) recordEnforcement(errs []error) {
	if m.opts.NodeEvents == nil || m.enforced {
		return
	}
	m.enforced = len(errs) == 0
	m.opts.NodeEvents.AllocatableEnforced(m.PodsCgroup(), errors.Join(errs...))
}
