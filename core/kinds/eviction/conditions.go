package eviction

import (
	"google.golang.org/protobuf/proto"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// pressureConditions are the node conditions eviction owns, in the order
// they are reported.
var pressureConditions = []string{"MemoryPressure", "DiskPressure", "PIDPressure"}

// mergeConditions are the conditions while the built-in evictor decides: a
// condition the plugin last reported True stays as the plugin left it (the
// plugin's thresholds are the operator's, and the built-in ones may not see
// the shortage), otherwise the built-in evictor's holds.
func mergeConditions(kept, builtin []*typesv1.NodeCondition) []*typesv1.NodeCondition {
	var out []*typesv1.NodeCondition
	for _, typ := range pressureConditions {
		c := find(builtin, typ)
		if k := find(kept, typ); k != nil && (k.GetStatus() == "True" || c == nil) {
			c = k
		}
		if c != nil {
			out = append(out, proto.Clone(c).(*typesv1.NodeCondition))
		}
	}
	return out
}

// pressureOnly keeps the pressure conditions of a plugin's answer, in
// order: the other node conditions are the core's.
func pressureOnly(conditions []*typesv1.NodeCondition) []*typesv1.NodeCondition {
	return mergeConditions(nil, conditions)
}

func find(conditions []*typesv1.NodeCondition, typ string) *typesv1.NodeCondition {
	for _, c := range conditions {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

func cloneConditions(conditions []*typesv1.NodeCondition) []*typesv1.NodeCondition {
	out := make([]*typesv1.NodeCondition, 0, len(conditions))
	for _, c := range conditions {
		out = append(out, proto.Clone(c).(*typesv1.NodeCondition))
	}
	return out
}
