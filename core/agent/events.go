package agent

import (
	"context"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/cluster/nodestatus"
)

// startEvents gives the agent its event recorder: on a node of a cluster
// client-go's, sending the kubelet's events to the API server until ctx
// ends; on a standalone node one that records nothing. It records that the
// agent started, as the kubelet's "Starting kubelet.".
func (a *Agent) startEvents(ctx context.Context, c *cluster) error {
	a.recorder = events.Nop
	if c != nil {
		b, err := events.Start(ctx, c.rest, a.cfg.NodeName, a.log.Named("events"))
		if err != nil {
			return err
		}
		a.recorder = b.Recorder()
	}
	a.nodeEvents = events.NewNode(a.recorder, a.cfg.NodeName)
	a.nodeEvents.Starting()
	return nil
}

// nodeStatusEvent records an event the node status calls for (NodeReady,
// NodeHasSufficientMemory, Rebooted, ...).
func (a *Agent) nodeStatusEvent(e nodestatus.Event) {
	a.nodeEvents.Event(e.Type, e.Reason, e.Message)
}
