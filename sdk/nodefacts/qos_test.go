package nodefacts

import "testing"

func TestComputeQOS(t *testing.T) {
	gi := int64(1 << 30)
	g := Requirements{Requests: CPUMemory{1000, gi}, Limits: CPUMemory{1000, gi}}
	none := Requirements{}
	tests := []struct {
		name       string
		podLevel   *Requirements
		containers []Requirements
		want       QOSClass
	}{
		{"nothing set", nil, []Requirements{none}, BestEffort},
		{"no containers", nil, nil, BestEffort},
		{"zero and negative amounts count as none", nil, []Requirements{{Requests: CPUMemory{0, -1}}}, BestEffort},
		{"requests equal limits", nil, []Requirements{g}, Guaranteed},
		{"requests equal limits everywhere", nil, []Requirements{g, {Requests: CPUMemory{500, gi}, Limits: CPUMemory{500, gi}}}, Guaranteed},
		{"a container without limits", nil, []Requirements{g, none}, Burstable},
		{"limits without requests (no API server defaulting)", nil, []Requirements{{Limits: CPUMemory{1000, gi}}}, Burstable},
		{"requests without limits", nil, []Requirements{{Requests: CPUMemory{1000, gi}}}, Burstable},
		{"cpu only", nil, []Requirements{{Requests: CPUMemory{CPUMillis: 1000}, Limits: CPUMemory{CPUMillis: 1000}}}, Burstable},
		{"only a memory limit", nil, []Requirements{{Limits: CPUMemory{MemoryBytes: gi}}}, Burstable},
		{"requests below limits", nil, []Requirements{{Requests: CPUMemory{500, gi}, Limits: CPUMemory{1000, gi}}}, Burstable},
		{"sums compare, not each container: 1+3 = 2+2", nil, []Requirements{
			{Requests: CPUMemory{1000, gi}, Limits: CPUMemory{2000, gi}},
			{Requests: CPUMemory{3000, gi}, Limits: CPUMemory{2000, gi}}}, Guaranteed},
		{"pod-level resources decide: Guaranteed", &g, []Requirements{none}, Guaranteed},
		{"pod-level resources decide over Guaranteed containers",
			&Requirements{Requests: CPUMemory{CPUMillis: 1000}, Limits: CPUMemory{CPUMillis: 2000}}, []Requirements{g}, Burstable},
		{"pod-level limits without memory",
			&Requirements{Requests: CPUMemory{CPUMillis: 1000}, Limits: CPUMemory{CPUMillis: 1000}}, []Requirements{none}, Burstable},
		{"pod-level requests only", &Requirements{Requests: CPUMemory{1000, gi}}, []Requirements{g}, Burstable},
		{"pod-level resources with nothing set", &Requirements{}, []Requirements{g}, BestEffort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComputeQOS(tt.podLevel, tt.containers); got != tt.want {
				t.Errorf("ComputeQOS = %s, want %s", got, tt.want)
			}
		})
	}
}
