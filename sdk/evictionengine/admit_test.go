package evictionengine

import (
	"slices"
	"strings"
	"testing"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func qos(p *typesv1.Pod, class string) *typesv1.Pod {
	p.QosClass = class
	return p
}

func TestUpstreamAdmission(t *testing.T) {
	memory := []string{ConditionMemoryPressure}
	tests := []struct {
		name     string
		pod      *typesv1.Pod
		pressure []string
		want     Admission
	}{
		{"no pressure admits BestEffort", qos(pod("p", 0), "BestEffort"), nil, Admission{Admit: true}},
		{"memory pressure rejects BestEffort", qos(pod("p", 0), "BestEffort"), memory,
			Admission{Message: "The node had condition: [MemoryPressure]. "}},
		{"memory pressure admits Burstable", qos(pod("p", 0), "Burstable"), memory, Admission{Admit: true}},
		{"memory pressure admits Guaranteed", qos(pod("p", 0), "Guaranteed"), memory, Admission{Admit: true}},
		{"memory pressure admits a critical BestEffort", critical(qos(pod("p", 0), "BestEffort")), memory, Admission{Admit: true}},
		{"disk pressure rejects Guaranteed", qos(pod("p", 0), "Guaranteed"), []string{ConditionDiskPressure},
			Admission{Message: "The node had condition: [DiskPressure]. "}},
		{"pid pressure rejects Burstable", pod("p", 0), []string{ConditionPIDPressure},
			Admission{Message: "The node had condition: [PIDPressure]. "}},
		{"memory and disk pressure reject Burstable", pod("p", 0), []string{ConditionMemoryPressure, ConditionDiskPressure},
			Admission{Message: "The node had condition: [MemoryPressure DiskPressure]. "}},
		{"disk pressure admits a critical pod", critical(pod("p", 0)), []string{ConditionDiskPressure}, Admission{Admit: true}},
	}
	for _, tt := range tests {
		if got := UpstreamAdmission(AdmitContext{Pod: tt.pod, Pressure: tt.pressure}); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// seen records the context the engine hands its policy.
type seen struct {
	fifo
	ctx AdmitContext
}

func (s *seen) Admit(a AdmitContext) Admission {
	s.ctx = a
	return UpstreamAdmission(a)
}

func TestEngineAdmit(t *testing.T) {
	policy := &seen{}
	e, err := New(configWith(func(*Config) {}), policy)
	if err != nil {
		t.Fatal(err)
	}
	req := &evictionv1.AdmitRequest{
		Pod: qos(pod("new", 0), "BestEffort"),
		Conditions: []*typesv1.NodeCondition{
			{Type: "Ready", Status: "True"},
			{Type: ConditionPIDPressure, Status: "True"},
			{Type: ConditionDiskPressure, Status: "False"},
			{Type: ConditionMemoryPressure, Status: "True"},
		},
	}
	resp, err := e.Admit(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetAdmit() || resp.GetReason() != "Evicted" || resp.GetMessage() != "The node had condition: [MemoryPressure PIDPressure]. " {
		t.Errorf("admit = %v", resp)
	}
	if policy.ctx.Synchronized || policy.ctx.Evictable != nil {
		t.Errorf("before any Synchronize the policy saw %+v", policy.ctx)
	}

	runCycle(t, e, newNode().at(time.Minute).pods(critical(pod("system", 2000)), pod("a", 0), pod("b", 10)).req)
	req.Conditions = nil
	if resp, err = e.Admit(req); err != nil || !resp.GetAdmit() || resp.GetReason() != "" {
		t.Errorf("admit without pressure = %v, %v", resp, err)
	}
	var uids []string
	for _, p := range policy.ctx.Evictable {
		uids = append(uids, p.GetUid())
	}
	if !policy.ctx.Synchronized || !policy.ctx.Now.Equal(t0.Add(time.Minute)) || !slices.Equal(uids, []string{"a", "b"}) {
		t.Errorf("after a Synchronize the policy saw synchronized %v, now %v, evictable %v", policy.ctx.Synchronized, policy.ctx.Now, uids)
	}

	if _, err := e.Admit(&evictionv1.AdmitRequest{}); err == nil || !strings.Contains(err.Error(), "AdmitRequest.pod is not set") {
		t.Errorf("admit without a pod: %v", err)
	}
}
