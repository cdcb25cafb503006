// Package kubelet is the upstream-compatible eviction strategy: the kubelet's
// ranking and admission over the shared engine.
package kubelet

import (
	"time"

	"github.com/microlet/microlet/plugins/eviction/engine"
)

// Policy ranks and admits as the kubelet does (pkg/kubelet/eviction/helpers.go
// rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure; eviction_manager.go
// Admit).
type Policy struct{}

// New builds the strategy's engine.
func New(cfg *engine.Config) (*engine.Engine, error) { return engine.New(*cfg, Policy{}) }

// Rank orders pods for eviction:
//   - memory, disk and inodes: pods using more than they requested first, then
//     lower priority, then the largest usage beyond the request;
//   - pids: lower priority first, then the most processes.
//
// Pods without stats go first on every usage key.
func (Policy) Rank(r engine.Resource, _ time.Time, candidates []engine.Candidate) {
	if r == engine.ResourcePIDs {
		engine.SortBy(candidates, engine.ByPriority, engine.ByUsage)
		return
	}
	engine.SortBy(candidates, engine.ByExceedsRequest, engine.ByPriority, engine.ByUsageAboveRequest)
}

// Admit is the kubelet's admission rule under pressure.
func (Policy) Admit(a engine.AdmitContext) engine.Admission { return engine.UpstreamAdmission(a) }
