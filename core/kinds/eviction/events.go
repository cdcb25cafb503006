package eviction

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

// recordThresholdMet records upstream's EvictionThresholdMet on the node
// when the strategy acts, reclaiming or evicting: "Attempting to reclaim
// <resource>" for the signal of its first action, the most urgent.
func (m *Manager) recordThresholdMet(resp *evictionv1.SynchronizeResponse) {
	var signal string
	switch {
	case len(resp.GetReclaim()) > 0:
		signal = resp.GetReclaim()[0].GetSignal()
	case len(resp.GetEvictions()) > 0:
		signal = resp.GetEvictions()[0].GetSignal()
	default:
		return
	}
	m.opts.Events.Eventf(events.NodeRef(m.opts.NodeName), v1.EventTypeWarning, events.EvictionThresholdMet, "Attempting to reclaim %s", signalResource(signal))
}

// signalResource is the resource an eviction signal starves, as upstream's
// signalToResource; a signal it does not know (a strategy's own) is named
// as it is.
func signalResource(signal string) string {
	switch {
	case strings.HasPrefix(signal, "memory.") || strings.HasPrefix(signal, "allocatableMemory."):
		return string(v1.ResourceMemory)
	case strings.HasSuffix(signal, ".inodesFree"):
		return "inodes"
	case strings.HasSuffix(signal, "fs.available"):
		return string(v1.ResourceEphemeralStorage)
	case signal == "pid.available":
		return "pids"
	}
	return signal
}
