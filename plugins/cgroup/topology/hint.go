// Package topology decides what the kubelet's topology manager decides
// (pkg/kubelet/cm/topologymanager): it merges the NUMA hints of the
// resource managers (CPU manager, memory manager, devices) for a container
// or a whole pod under one of upstream's policies, refuses a pod whose
// resources cannot be aligned (TopologyAffinityError), and hands each
// manager the chosen affinity to allocate with. It does no I/O.
//
// docs/cgroups.md (Topology manager) describes the behaviour and what a
// node of one NUMA node can and cannot show of it.
package topology

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Mask is a set of NUMA node IDs (upstream bitmask.BitMask; at most 64
// nodes, upstream allows 8 by default). The empty mask is upstream's nil
// affinity: no preference.
type Mask uint64

// NewMask is the mask of the given nodes.
func NewMask(nodes ...int) (Mask, error) {
	var m Mask
	for _, n := range nodes {
		if n < 0 || n > 63 {
			return 0, fmt.Errorf("NUMA node %d is out of range 0-63", n)
		}
		m |= 1 << n
	}
	return m, nil
}

// Nodes are the mask's node IDs in order.
func (m Mask) Nodes() []int {
	var out []int
	for b := uint64(m); b != 0; b &= b - 1 {
		out = append(out, bits.TrailingZeros64(b))
	}
	return out
}

// Count is how many nodes the mask has.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// Has reports whether node is in the mask.
func (m Mask) Has(node int) bool { return node >= 0 && node < 64 && m&(1<<node) != 0 }

// AnyOf reports whether one of nodes is in the mask.
func (m Mask) AnyOf(nodes []int) bool { return slices.ContainsFunc(nodes, m.Has) }

// NarrowerThan is upstream's IsNarrowerThan: fewer nodes, or as many and
// lower IDs.
func (m Mask) NarrowerThan(o Mask) bool {
	if m.Count() == o.Count() {
		return m < o
	}
	return m.Count() < o.Count()
}

func (m Mask) String() string {
	parts := make([]string, 0, m.Count())
	for _, n := range m.Nodes() {
		parts = append(parts, fmt.Sprint(n))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Masks calls fn with every non-empty subset of nodes, smallest first, as
// upstream's IterateBitMasks.
func Masks(nodes []int, fn func(Mask)) {
	var iterate func(rest []int, acc Mask, size int)
	iterate = func(rest []int, acc Mask, size int) {
		if acc.Count() == size {
			fn(acc)
			return
		}
		for i, n := range rest {
			iterate(rest[i+1:], acc|1<<n, size)
		}
	}
	for size := 1; size <= len(nodes); size++ {
		iterate(nodes, 0, size)
	}
}

// Hint is one way a resource could be placed: on the nodes of Affinity
// (empty: anywhere), and whether that is a preferred way.
type Hint struct {
	Affinity  Mask
	Preferred bool
}

func (h Hint) String() string {
	aff := "any"
	if h.Affinity != 0 {
		aff = h.Affinity.String()
	}
	return fmt.Sprintf("{%s preferred=%t}", aff, h.Preferred)
}

// Hints are one provider's hints by resource. A nil map, or a resource
// with nil hints, has no preference; a resource with an empty, non-nil
// list cannot be placed at all.
type Hints map[string][]Hint

// GenerateHints are the hints of a request that count of the items on the
// node's nodes can satisfy (upstream's generateCPUTopologyHints and
// generateDeviceTopologyHints): every mask with count of the available
// items on it, and all reusable ones (items the pod holds already) within
// it; preferred when the mask is as narrow as any mask holding count items
// at all. itemNodes are the nodes of every item of the resource, free or
// not.
func GenerateHints(nodes []int, itemNodes, available, reusable [][]int, count int) []Hint {
	minSize := len(nodes)
	hints := []Hint{}
	Masks(nodes, func(m Mask) {
		in := 0
		for _, n := range itemNodes {
			if m.AnyOf(n) {
				in++
			}
		}
		if in >= count && m.Count() < minSize {
			minSize = m.Count()
		}
		matching := 0
		for _, n := range reusable {
			if len(n) == 0 {
				// As upstream: a held device without topology neither
				// counts nor rules a mask out.
				continue
			}
			if !m.AnyOf(n) {
				return
			}
			matching++
		}
		for _, n := range available {
			if m.AnyOf(n) {
				matching++
			}
		}
		if matching >= count {
			hints = append(hints, Hint{Affinity: m})
		}
	})
	for i := range hints {
		hints[i].Preferred = hints[i].Affinity.Count() == minSize
	}
	return hints
}
