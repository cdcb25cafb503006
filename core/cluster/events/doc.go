// Package events records the node's events in the API server as the
// kubelet does: client-go's event broadcaster and recorder (its spam filter
// and its correlation, which aggregates similar events and counts repeats),
// sent through a client of their own limited to the kubelet's eventRecordQPS
// 50 and eventBurst 100, with upstream's reasons and messages.
//
// Events name their source as the kubelet's do: component "kubelet", host
// the node's name. The control plane does not care, but people and tools
// do: `kubectl get events` shows the source, and dashboards, alerts and
// `--field-selector source=kubelet` select a node agent's events by it, so
// a microlet node's events look like every other node's.
//
// The core's packages record through Recorder (client-go's interface); a
// standalone node, which has no API server, gets Nop and nothing changes.
package events
