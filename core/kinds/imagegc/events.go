package imagegc

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pluginhost"
	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
)

// recordOutcome records upstream's events for a periodic collection that
// failed (the caller holds m.mu): ContainerGCFailed on every failed
// container collection, ImageGCFailed only when image collection fails
// twice in a row, as the kubelet's StartGarbageCollection (the first
// failure may be stats not being ready yet). A collection skipped because
// the plugin is not configured or does not serve did not fail, and leaves
// the count as it is.
func (m *Manager) recordOutcome(what string, err error) {
	if err != nil && (errors.Is(err, errUnsupported) || errors.Is(err, pluginhost.ErrUnavailable)) {
		return
	}
	node := events.NodeRef(m.opts.NodeName)
	switch what {
	case "containers":
		if err != nil {
			m.opts.Events.Event(node, v1.EventTypeWarning, events.ContainerGCFailed, err.Error())
		}
	case "images":
		if err != nil && m.imagesFailed {
			m.opts.Events.Event(node, v1.EventTypeWarning, events.ImageGCFailed, err.Error())
		}
		m.imagesFailed = err != nil
	}
}

// recordFreeDiskSpaceFailed records the plugin's FreeDiskSpaceFailed: its
// plan cannot free what its thresholds require.
func (m *Manager) recordFreeDiskSpaceFailed(plan *imagegcv1.PlanImageGCResponse) {
	if msg := plan.GetFreeDiskSpaceFailed(); msg != "" {
		m.opts.Events.Event(events.NodeRef(m.opts.NodeName), v1.EventTypeWarning, events.FreeDiskSpaceFailed, msg)
	}
}
