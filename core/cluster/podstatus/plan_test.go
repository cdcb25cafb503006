package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podspec"
)

func cond(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s}
}

func TestMergeStatus(t *testing.T) {
	disruption := cond(v1.DisruptionTarget, v1.ConditionTrue)
	tests := []struct {
		name          string
		api, node     v1.PodStatus
		couldRun      bool
		wantPhase     v1.PodPhase
		wantReason    string
		wantCondTypes []v1.PodConditionType
	}{
		{
			name:          "others' conditions kept, the node's replaced",
			api:           v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{cond("example.com/gate", v1.ConditionTrue), cond(v1.PodReady, v1.ConditionFalse)}},
			node:          v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)}},
			wantPhase:     v1.PodRunning,
			wantCondTypes: []v1.PodConditionType{"example.com/gate", v1.PodReady},
		},
		{
			name:      "terminal held back while containers could run",
			api:       v1.PodStatus{Phase: v1.PodRunning},
			node:      v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Conditions: []v1.PodCondition{disruption}},
			couldRun:  true,
			wantPhase: v1.PodRunning,
		},
		{
			name:          "terminal with DisruptionTarget once stopped",
			api:           v1.PodStatus{Phase: v1.PodRunning},
			node:          v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Conditions: []v1.PodCondition{disruption}},
			wantPhase:     v1.PodFailed,
			wantReason:    "Evicted",
			wantCondTypes: []v1.PodConditionType{v1.DisruptionTarget},
		},
		{
			name:       "a terminal phase in the API is final",
			api:        v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu"},
			node:       v1.PodStatus{Phase: v1.PodRunning},
			wantPhase:  v1.PodFailed,
			wantReason: "OutOfcpu",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, heldBack := mergeStatus(tt.api, tt.node, tt.couldRun)
			if heldBack != (tt.wantPhase != tt.node.Phase && tt.couldRun) {
				t.Errorf("heldBack = %v", heldBack)
			}
			if got.Phase != tt.wantPhase || got.Reason != tt.wantReason {
				t.Errorf("phase %s/%s, want %s/%s", got.Phase, got.Reason, tt.wantPhase, tt.wantReason)
			}
			var types []v1.PodConditionType
			for _, c := range got.Conditions {
				types = append(types, c.Type)
			}
			if len(types) != len(tt.wantCondTypes) {
				t.Fatalf("conditions %v, want %v", types, tt.wantCondTypes)
			}
			for i := range types {
				if types[i] != tt.wantCondTypes[i] {
					t.Fatalf("conditions %v, want %v", types, tt.wantCondTypes)
				}
			}
		})
	}
}

func TestTarget(t *testing.T) {
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "m1", Annotations: map[string]string{podspec.ConfigMirrorAnnotationKey: "static1"}}}
	tests := []struct {
		name string
		pod  *v1.Pod
		uid  types.UID
		want bool
	}{
		{"no API pod", nil, "u1", false},
		{"the API pod", apiPod, "u1", true},
		{"recreated under the name", apiPod, "u0", false},
		{"the static pod's mirror", mirror, "static1", true},
		{"a mirror of another version", mirror, "static2", false},
	}
	for _, tt := range tests {
		if _, ok := target(tt.pod, tt.uid); ok != tt.want {
			t.Errorf("%s: target = %v, want %v", tt.name, ok, tt.want)
		}
	}
}

func TestCanBeDeleted(t *testing.T) {
	now := metav1.Now()
	deleting := func(phase v1.PodPhase, mirror bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Annotations: map[string]string{}}, Status: v1.PodStatus{Phase: phase}}
		if mirror {
			p.Annotations[podspec.ConfigMirrorAnnotationKey] = "x"
		}
		return p
	}
	tests := []struct {
		name               string
		pod                *v1.Pod
		finished, couldRun bool
		want               bool
	}{
		{"not being deleted", &v1.Pod{Status: v1.PodStatus{Phase: v1.PodFailed}}, true, false, false},
		{"finished", deleting(v1.PodSucceeded, false), true, false, true},
		{"API still shows it running", deleting(v1.PodRunning, false), true, false, false},
		{"containers may run", deleting(v1.PodFailed, false), false, true, false},
		{"never ran (refused)", deleting(v1.PodFailed, false), false, false, true},
		{"mirror pods are not ours to delete here", deleting(v1.PodFailed, true), true, false, false},
	}
	for _, tt := range tests {
		if got := canBeDeleted(tt.pod, tt.finished, tt.couldRun); got != tt.want {
			t.Errorf("%s: canBeDeleted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestStatusPatch(t *testing.T) {
	api := v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort}
	patch, unchanged, err := statusPatch("u1", api, api)
	if err != nil || !unchanged {
		t.Fatalf("same status: patch %s unchanged %v err %v", patch, unchanged, err)
	}
	next := api
	next.Phase = v1.PodRunning
	patch, unchanged, err = statusPatch("u1", api, next)
	if err != nil || unchanged || string(patch) != `{"metadata":{"uid":"u1"},"status":{"phase":"Running"}}` {
		t.Fatalf("phase change: patch %s unchanged %v err %v", patch, unchanged, err)
	}
}
