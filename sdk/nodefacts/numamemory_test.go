package nodefacts

import (
	"fmt"
	"strings"
	"testing"
)

func TestMemoryMachineState(t *testing.T) {
	defaults := map[int]map[string]MemoryTable{
		0: {"memory": {Total: 10, SystemReserved: 2, Allocatable: 8}},
		1: {"memory": {Total: 10, SystemReserved: 2, Allocatable: 8}},
	}
	for _, tc := range []struct {
		name     string
		assigned MemoryAssignments
		want     string
		err      string
	}{
		{name: "empty", want: "0:n=0,cells=[0],res=0,free=8 1:n=0,cells=[1],res=0,free=8"},
		{name: "one node", assigned: MemoryAssignments{"p": {"a": {{NUMAAffinity: []int{1}, Type: "memory", Size: 3}}}},
			want: "0:n=0,cells=[0],res=0,free=8 1:n=1,cells=[1],res=3,free=5"},
		{name: "a group fills its first node first", assigned: MemoryAssignments{"p": {"a": {{NUMAAffinity: []int{0, 1}, Type: "memory", Size: 10}}}},
			want: "0:n=1,cells=[0 1],res=8,free=0 1:n=1,cells=[0 1],res=2,free=6"},
		{name: "handed out twice", assigned: MemoryAssignments{"p": {"a": {{NUMAAffinity: []int{0}, Type: "memory", Size: 5}}, "b": {{NUMAAffinity: []int{0}, Type: "memory", Size: 5}}}},
			err: "do not fit"},
		{name: "unknown node", assigned: MemoryAssignments{"p": {"a": {{NUMAAffinity: []int{2}, Type: "memory", Size: 1}}}}, err: "does not exist"},
		{name: "unknown type", assigned: MemoryAssignments{"p": {"a": {{NUMAAffinity: []int{0}, Type: "hugepages-2Mi", Size: 1}}}}, err: "does not have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := MemoryMachineState(defaults, tc.assigned)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, id := range []int{0, 1} {
				m := s[id].Tables["memory"]
				parts = append(parts, fmt.Sprintf("%d:n=%d,cells=%v,res=%d,free=%d", id, s[id].Assignments, s[id].Cells, m.Reserved, m.Free))
			}
			if got := strings.Join(parts, " "); got != tc.want {
				t.Fatalf("state %s, want %s", got, tc.want)
			}
			if defaults[0]["memory"].Reserved != 0 {
				t.Fatal("the defaults were changed")
			}
		})
	}
}
