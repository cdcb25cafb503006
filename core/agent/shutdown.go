package agent

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/core/node/shutdown"
)

// newShutdown builds graceful node shutdown from its keys; it is off
// (Enabled false) when no grace period is set. Its pods are the sync
// loop's, built afterwards and reached through p, the kill path eviction
// uses.
func (a *Agent) newShutdown(p *pods, reg prometheus.Registerer) (*shutdown.Manager, error) {
	cfg := a.cfg
	entries, err := cfg.ShutdownGracePeriodsByPodPriority()
	if err != nil {
		return nil, fmt.Errorf("shutdown_grace_period_by_pod_priority: %w", err)
	}
	byPriority := make([]shutdown.Period, len(entries))
	for i, e := range entries {
		byPriority[i] = shutdown.Period{Priority: e.Priority, Grace: e.Grace}
	}
	return shutdown.New(shutdown.Options{
		Periods: shutdown.Periods(cfg.ShutdownGracePeriod, cfg.ShutdownGracePeriodCriticalPods, byPriority),
		Pods:    evictionPods{p},
		OnChange: func() {
			select {
			case p.statusKick <- struct{}{}:
			default:
			}
		},
		NodeEvents: a.nodeEvents,
		StateDir:   cfg.RootDir,
		Registerer: reg,
		Logger:     a.log.Named("shutdown"),
	})
}
