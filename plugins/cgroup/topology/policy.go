package topology

import (
	"fmt"
	"slices"
)

// The policies (topologyManagerPolicy) and scopes (topologyManagerScope).
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"

	ScopeContainer = "container"
	ScopePod       = "pod"
)

// maxNUMANodes is upstream's default max-allowable-numa-nodes: a policy
// other than none refuses to run on more.
const maxNUMANodes = 8

// Policy is a validated topology manager configuration.
type Policy struct {
	Name, Scope string
}

// NewPolicy checks the kubelet's keys as upstream does at start.
func NewPolicy(name, scope string) (*Policy, error) {
	switch name {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	default:
		return nil, fmt.Errorf("unknown topology_manager_policy %q; expected %q, %q, %q or %q", name, PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode)
	}
	switch scope {
	case ScopeContainer, ScopePod:
	default:
		return nil, fmt.Errorf("unknown topology_manager_scope %q; expected %q or %q", scope, ScopeContainer, ScopePod)
	}
	return &Policy{Name: name, Scope: scope}, nil
}

// Merge is the policy's merge of the providers' hints for one container
// or pod on a node of the given NUMA nodes: the best hint, and whether
// the policy admits it (upstream Policy.Merge).
func (p *Policy) Merge(nodes []int, providers []Hints) (Hint, bool) {
	if p.Name == PolicyNone {
		return Hint{}, true
	}
	all, _ := NewMask(nodes...)
	filtered := filterProviders(providers)
	if p.Name == PolicySingleNUMANode {
		filtered = singleNUMA(filtered)
	}
	best := merger{all: all, hints: filtered, bestNonPreferred: maxOfMinCounts(filtered)}.merge()
	switch p.Name {
	case PolicyBestEffort:
		return best, true
	case PolicySingleNUMANode:
		if best.Affinity == all {
			best.Affinity = 0
		}
	}
	return best, best.Preferred
}

// filterProviders is one hint list per resource: no preference is one
// preferred hint for anywhere, no possible placement one non-preferred
// hint for anywhere (upstream filterProvidersHints).
func filterProviders(providers []Hints) [][]Hint {
	var out [][]Hint
	for _, hints := range providers {
		if len(hints) == 0 {
			out = append(out, []Hint{{Preferred: true}})
			continue
		}
		for _, resource := range sortedKeys(hints) {
			switch list := hints[resource]; {
			case list == nil:
				out = append(out, []Hint{{Preferred: true}})
			case len(list) == 0:
				out = append(out, []Hint{{Preferred: false}})
			default:
				out = append(out, list)
			}
		}
	}
	return out
}

// singleNUMA keeps the preferred hints for anywhere or for one node.
func singleNUMA(all [][]Hint) [][]Hint {
	out := make([][]Hint, 0, len(all))
	for _, hints := range all {
		var kept []Hint
		for _, h := range hints {
			if h.Preferred && h.Affinity.Count() <= 1 {
				kept = append(kept, h)
			}
		}
		out = append(out, kept)
	}
	return out
}

// maxOfMinCounts is the widest of each resource's narrowest hint.
func maxOfMinCounts(all [][]Hint) int {
	most := 0
	for _, hints := range all {
		var narrowest Mask
		for _, h := range hints {
			if h.Affinity != 0 && (narrowest == 0 || h.Affinity.NarrowerThan(narrowest)) {
				narrowest = h.Affinity
			}
		}
		most = max(most, narrowest.Count())
	}
	return most
}

type merger struct {
	all              Mask
	hints            [][]Hint
	bestNonPreferred int
}

// merge tries every combination of one hint per resource (upstream
// HintMerger.Merge).
func (m merger) merge() Hint {
	var best *Hint
	var iterate func(i int, acc []Hint)
	iterate = func(i int, acc []Hint) {
		if i == len(m.hints) {
			merged := m.permutation(acc)
			best = m.compare(best, &merged)
			return
		}
		for _, h := range m.hints[i] {
			iterate(i+1, append(acc, h))
		}
	}
	iterate(0, nil)
	if best == nil {
		return Hint{Affinity: m.all}
	}
	return *best
}

// permutation is the intersection of the hints' affinities, preferred
// when every hint is and all affinities are the same.
func (m merger) permutation(hints []Hint) Hint {
	merged, preferred := m.all, true
	var first Mask
	for _, h := range hints {
		if h.Affinity != 0 {
			if first == 0 {
				first = h.Affinity
			}
			if h.Affinity != first {
				preferred = false
			}
			merged &= h.Affinity
		}
		if !h.Preferred {
			preferred = false
		}
	}
	return Hint{Affinity: merged, Preferred: preferred}
}

// compare is upstream's HintMerger.compare: preferred over not; among
// preferred the narrower; among non-preferred the one closest to the
// widest narrowest hint of any resource.
func (m merger) compare(current, candidate *Hint) *Hint {
	narrower := func() *Hint {
		if candidate.Affinity == current.Affinity || !candidate.Affinity.NarrowerThan(current.Affinity) {
			return current
		}
		return candidate
	}
	cur, cand, target := 0, candidate.Affinity.Count(), m.bestNonPreferred
	switch {
	case cand == 0:
		return current
	case current == nil:
		return candidate
	}
	cur = current.Affinity.Count()
	switch {
	case !current.Preferred && candidate.Preferred:
		return candidate
	case current.Preferred && !candidate.Preferred:
		return current
	case current.Preferred && candidate.Preferred:
		return narrower()
	case cur > target:
		return narrower()
	case cur == target:
		if cand != target {
			return current
		}
		return narrower()
	case cand > target:
		return current
	case cand == target:
		return candidate
	case cand > cur:
		return candidate
	case cand < cur:
		return current
	}
	return narrower()
}

func sortedKeys(h Hints) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
