// Package kubelet is the upstream-compatible eviction strategy: the kubelet's
// ranking and admission over the shared evictionengine.
package kubelet

import (
	"time"

	"github.com/microlet/microlet/sdk/evictionengine"
)

// Policy ranks and admits as the kubelet does (pkg/kubelet/eviction/helpers.go
// rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure; eviction_manager.go
// Admit).
type Policy struct{}

// New builds the strategy's evictionengine.
func New(cfg *evictionengine.Config) (*evictionengine.Engine, error) {
	return evictionengine.New(*cfg, Policy{})
}

// Rank orders pods for eviction:
//   - memory, disk and inodes: pods using more than they requested first, then
//     lower priority, then the largest usage beyond the request;
//   - pids: lower priority first, then the most processes.
//
// Pods without stats go first on every usage key.
func (Policy) Rank(r evictionengine.Resource, _ time.Time, candidates []evictionengine.Candidate) {
	if r == evictionengine.ResourcePIDs {
		evictionengine.SortBy(candidates, evictionengine.ByPriority, evictionengine.ByUsage)
		return
	}
	evictionengine.SortBy(candidates, evictionengine.ByExceedsRequest, evictionengine.ByPriority, evictionengine.ByUsageAboveRequest)
}

// Admit is the kubelet's admission rule under pressure.
func (Policy) Admit(a evictionengine.AdmitContext) evictionengine.Admission {
	return evictionengine.UpstreamAdmission(a)
}
