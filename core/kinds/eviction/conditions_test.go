package eviction

import (
	"fmt"
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func conditions(pairs ...string) []*typesv1.NodeCondition {
	var out []*typesv1.NodeCondition
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &typesv1.NodeCondition{Type: pairs[i], Status: pairs[i+1], Reason: "from " + pairs[i+1]})
	}
	return out
}

func render(cs []*typesv1.NodeCondition) string {
	var s string
	for _, c := range cs {
		s += fmt.Sprintf("%s=%s ", c.GetType(), c.GetStatus())
	}
	return s
}

func TestMergeConditions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		kept, builtin []*typesv1.NodeCondition
		want          string
	}{
		{"no plugin ever answered", nil, conditions("MemoryPressure", "False", "DiskPressure", "True", "PIDPressure", "False"),
			"MemoryPressure=False DiskPressure=True PIDPressure=False "},
		{"the plugin's True conditions stay, the built-in evictor raises others",
			conditions("MemoryPressure", "True", "DiskPressure", "False", "PIDPressure", "False"),
			conditions("MemoryPressure", "False", "DiskPressure", "True", "PIDPressure", "False"),
			"MemoryPressure=True DiskPressure=True PIDPressure=False "},
		{"a condition only the plugin reported", conditions("PIDPressure", "True"), conditions("MemoryPressure", "False"),
			"MemoryPressure=False PIDPressure=True "},
		{"other condition types are not eviction's", nil, conditions("Ready", "True", "DiskPressure", "False"),
			"DiskPressure=False "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(mergeConditions(tc.kept, tc.builtin)); got != tc.want {
				t.Errorf("mergeConditions = %q, want %q", got, tc.want)
			}
		})
	}
}
