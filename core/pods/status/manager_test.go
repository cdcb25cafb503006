package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestManager() (*Manager, *clocktesting.FakePassiveClock) {
	clk := clocktesting.NewFakePassiveClock(t0)
	return NewManager(nil, clk), clk
}

func runningStatus(names ...string) v1.PodStatus {
	s := v1.PodStatus{Phase: v1.PodRunning}
	for _, n := range names {
		s.ContainerStatuses = append(s.ContainerStatuses, ready(running(n)))
	}
	s.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	return s
}

func mustStatus(t *testing.T, m *Manager, uid types.UID) VersionedPodStatus {
	t.Helper()
	all, _ := m.Statuses()
	for _, s := range all {
		if s.UID == uid {
			return s
		}
	}
	t.Fatalf("no status for %s", uid)
	return VersionedPodStatus{}
}

func TestManagerVersionsAndTimes(t *testing.T) {
	m, clk := newTestManager()
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	pod.Generation = 2

	m.SetPodStatus(pod, runningStatus("a"))
	first := mustStatus(t, m, pod.UID)
	if first.Version != 1 || first.Name != "web" || first.Namespace != "default" {
		t.Fatalf("first status: version %d %s/%s", first.Version, first.Namespace, first.Name)
	}
	if first.Status.StartTime == nil || !first.Status.StartTime.Time.Equal(t0) {
		t.Errorf("start time %v; want now, %v", first.Status.StartTime, t0)
	}
	if first.Status.ObservedGeneration != 2 {
		t.Errorf("observed generation %d; want the pod's 2", first.Status.ObservedGeneration)
	}
	readySince := first.Status.Conditions[0].LastTransitionTime

	// The same status again is not a change.
	clk.SetTime(at(10))
	_, changed := m.Statuses()
	m.SetPodStatus(pod, runningStatus("a"))
	if got := mustStatus(t, m, pod.UID).Version; got != 1 {
		t.Errorf("version %d after an unchanged status; want 1", got)
	}
	select {
	case <-changed:
		t.Error("readers were told of a change that did not happen")
	default:
	}

	// A change bumps the version, keeps the start time, and keeps the
	// transition time of a condition whose status did not change.
	s := runningStatus("a")
	s.Message = "new"
	m.SetPodStatus(pod, s)
	<-changed
	second := mustStatus(t, m, pod.UID)
	if second.Version != 2 || second.Status.Message != "new" {
		t.Errorf("after a change: version %d message %q", second.Version, second.Status.Message)
	}
	if !second.Status.StartTime.Time.Equal(t0) {
		t.Errorf("start time moved to %v", second.Status.StartTime)
	}
	if got := second.Status.Conditions[0].LastTransitionTime; !got.Equal(&readySince) {
		t.Errorf("Ready transition time moved to %v though Ready stayed true", got)
	}

	// A condition that flips gets a new transition time.
	clk.SetTime(at(20))
	s.Conditions[0].Status = v1.ConditionFalse
	m.SetPodStatus(pod, s)
	if got := mustStatus(t, m, pod.UID).Status.Conditions[0].LastTransitionTime; !got.Time.Equal(at(20)) {
		t.Errorf("Ready transition time %v; want %v", got, at(20))
	}

	got, ok := m.GetPodStatus(pod.UID)
	if !ok || got.Message != "new" {
		t.Fatalf("GetPodStatus = %+v, %v", got, ok)
	}
	got.Message = "changed by the caller"
	if again, _ := m.GetPodStatus(pod.UID); again.Message != "new" {
		t.Error("GetPodStatus returned the manager's own copy")
	}
}

func TestManagerNormalizes(t *testing.T) {
	m, _ := newTestManager()
	pod := testPod(v1.RestartPolicyAlways, nil, "b", "a")
	s := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
		{Name: "b", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(1500 * time.Millisecond))}}},
		{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: string(make([]byte, 10000))}}},
	}}
	m.SetPodStatus(pod, s)
	got, _ := m.GetPodStatus(pod.UID)
	if got.ContainerStatuses[0].Name != "a" {
		t.Errorf("container statuses not sorted by name")
	}
	if n := len(got.ContainerStatuses[0].State.Terminated.Message); n != maxPodTerminationMessageLogLength/2 {
		t.Errorf("termination message of %d bytes; want the pod's budget shared by 2 containers, %d", n, maxPodTerminationMessageLogLength/2)
	}
	if at := got.ContainerStatuses[1].State.Running.StartedAt; !at.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("start %v not truncated to the second", at)
	}
}

func TestManagerRefusesIllegalTransitions(t *testing.T) {
	tests := []struct {
		name   string
		policy v1.RestartPolicy
		first  v1.PodStatus
		next   v1.PodStatus
		want   func(v1.PodStatus) bool
	}{
		{
			"Never: a terminated container does not run again", v1.RestartPolicyNever,
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated("a", 0)}},
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}},
			func(s v1.PodStatus) bool { return s.ContainerStatuses[0].State.Terminated != nil },
		},
		{
			"OnFailure: a failed container may run again", v1.RestartPolicyOnFailure,
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated("a", 1)}},
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}},
			func(s v1.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil },
		},
		{
			"OnFailure: a succeeded container does not", v1.RestartPolicyOnFailure,
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated("a", 0)}},
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}},
			func(s v1.PodStatus) bool { return s.ContainerStatuses[0].State.Terminated != nil },
		},
		{
			"Always: anything goes", v1.RestartPolicyAlways,
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated("a", 0)}},
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}},
			func(s v1.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil },
		},
		{
			"a terminal phase sticks", v1.RestartPolicyAlways,
			v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "low on memory"},
			v1.PodStatus{Phase: v1.PodRunning, Reason: "", Message: "back"},
			func(s v1.PodStatus) bool {
				return s.Phase == v1.PodFailed && s.Reason == "Evicted" && s.Message == "low on memory"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestManager()
			pod := testPod(tt.policy, nil, "a")
			m.SetPodStatus(pod, tt.first)
			m.SetPodStatus(pod, tt.next)
			if got, _ := m.GetPodStatus(pod.UID); !tt.want(got) {
				t.Errorf("status after the transition: %+v", got)
			}
		})
	}
}

func TestTerminatePod(t *testing.T) {
	tests := []struct {
		name      string
		pod       *v1.Pod
		status    v1.PodStatus
		wantPhase v1.PodPhase
		// wantUnknown lists the containers that must end terminated with
		// ContainerStatusUnknown.
		wantUnknown []string
		wantKept    []string
	}{
		{
			name:        "running containers are marked unknown, the pod Failed",
			pod:         testPod(v1.RestartPolicyAlways, nil, "a", "b"),
			status:      v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a"), terminated("b", 0)}},
			wantPhase:   v1.PodFailed,
			wantUnknown: []string{"a"},
			wantKept:    []string{"b"},
		},
		{
			name:      "a succeeded pod stays Succeeded",
			pod:       testPod(v1.RestartPolicyNever, nil, "a"),
			status:    v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{terminated("a", 0)}},
			wantPhase: v1.PodSucceeded,
			wantKept:  []string{"a"},
		},
		{
			name:        "a static pod keeps its phase",
			pod:         static(testPod(v1.RestartPolicyAlways, nil, "a")),
			status:      v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}},
			wantPhase:   v1.PodRunning,
			wantUnknown: []string{"a"},
		},
		{
			name: "not initialized: regular containers stay waiting, init containers up to the one that ran are unknown",
			pod:  testPod(v1.RestartPolicyAlways, []string{"i1", "i2", "i3"}, "a"),
			status: v1.PodStatus{
				Phase:                 v1.PodPending,
				InitContainerStatuses: []v1.ContainerStatus{terminated("i1", 0), running("i2"), waiting("i3")},
				ContainerStatuses:     []v1.ContainerStatus{waiting("a")},
			},
			wantPhase:   v1.PodFailed,
			wantUnknown: []string{"i2"},
			wantKept:    []string{"i1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestManager()
			tt.pod.Status = tt.status
			m.SetPodStatus(tt.pod, tt.status)
			m.TerminatePod(tt.pod)
			v := mustStatus(t, m, tt.pod.UID)
			if !v.PodIsFinished {
				t.Error("status not marked finished")
			}
			if v.Status.Phase != tt.wantPhase {
				t.Errorf("phase %s; want %s", v.Status.Phase, tt.wantPhase)
			}
			all := map[string]v1.ContainerStatus{}
			for _, c := range append(v.Status.InitContainerStatuses, v.Status.ContainerStatuses...) {
				all[c.Name] = c
			}
			for _, name := range tt.wantUnknown {
				if term := all[name].State.Terminated; term == nil || term.Reason != ContainerStatusUnknown || term.ExitCode != 137 {
					t.Errorf("%s: state %+v; want terminated ContainerStatusUnknown 137", name, all[name].State)
				}
			}
			for _, name := range tt.wantKept {
				if term := all[name].State.Terminated; term == nil || term.Reason == ContainerStatusUnknown {
					t.Errorf("%s: state %+v; want its own termination kept", name, all[name].State)
				}
			}
			if s := all["a"]; len(tt.pod.Spec.InitContainers) > 0 && s.State.Waiting == nil {
				t.Errorf("a regular container of an uninitialized pod was changed: %+v", s.State)
			}

			// A later status cannot make it unfinished.
			m.SetPodStatus(tt.pod, v.Status)
			if !mustStatus(t, m, tt.pod.UID).PodIsFinished && !IsStaticPod(tt.pod) {
				t.Error("a later status made the pod unfinished")
			}
		})
	}
}

func TestManagerReadinessAndStartup(t *testing.T) {
	m, _ := newTestManager()
	pod := testPod(v1.RestartPolicyAlways, nil, "a", "b")
	s := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a"), ready(running("b"))}}
	s.ContainerStatuses[0].ContainerID = "containerd://c-a"
	s.ContainerStatuses[1].ContainerID = "containerd://c-b"
	s.Conditions = []v1.PodCondition{
		containersReadyCondition(pod, s.ContainerStatuses, s.Phase),
		podReadyCondition(pod, nil, s.ContainerStatuses, s.Phase),
	}
	m.SetPodStatus(pod, s)

	m.SetContainerReadiness(pod.UID, "c-unknown", true)
	m.SetContainerReadiness("other-pod", "c-a", true)
	if v := mustStatus(t, m, pod.UID); v.Version != 1 {
		t.Errorf("unknown container or pod changed the status (version %d)", v.Version)
	}

	m.SetContainerReadiness(pod.UID, "c-a", true)
	got, _ := m.GetPodStatus(pod.UID)
	if !got.ContainerStatuses[0].Ready || conditionSummary(got)[v1.PodReady] != v1.ConditionTrue || conditionSummary(got)[v1.ContainersReady] != v1.ConditionTrue {
		t.Errorf("after readiness: %+v", got)
	}

	m.SetContainerStartup(pod.UID, "c-b", true)
	got, _ = m.GetPodStatus(pod.UID)
	if st := got.ContainerStatuses[1].Started; st == nil || !*st {
		t.Errorf("started not recorded: %v", st)
	}
	if v := mustStatus(t, m, pod.UID); v.Version != 3 {
		t.Errorf("version %d; want 3", v.Version)
	}
}

func TestManagerRemoveOrphanedStatuses(t *testing.T) {
	m, _ := newTestManager()
	keep, drop := testPod(v1.RestartPolicyAlways, nil, "a"), testPod(v1.RestartPolicyAlways, nil, "a")
	drop.UID, drop.Name = "uid-2", "old"
	m.SetPodStatus(keep, runningStatus("a"))
	m.SetPodStatus(drop, runningStatus("a"))
	_, changed := m.Statuses()
	m.RemoveOrphanedStatuses(map[types.UID]bool{keep.UID: true})
	<-changed
	all, _ := m.Statuses()
	if len(all) != 1 || all[0].UID != keep.UID {
		t.Errorf("statuses %+v; want only the kept pod", all)
	}
}

func TestDecidedStatuses(t *testing.T) {
	m, _ := newTestManager()
	rejected := testPod(v1.RestartPolicyAlways, nil, "a")
	m.SetPodStatus(rejected, RejectedStatus(rejected, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000"))
	got, _ := m.GetPodStatus(rejected.UID)
	if got.Phase != v1.PodFailed || got.Reason != "OutOfcpu" || got.Message != "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000" || got.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("rejected status %+v", got)
	}

	evicted := testPod(v1.RestartPolicyAlways, nil, "a")
	evicted.UID, evicted.Generation = "uid-2", 4
	s := runningStatus("a")
	EvictedStatusFunc(evicted, "The node was low on resource: memory.")(&s)
	m.SetPodStatus(evicted, s)
	got, _ = m.GetPodStatus(evicted.UID)
	if got.Phase != v1.PodFailed || got.Reason != "Evicted" || got.Message != "The node was low on resource: memory." {
		t.Errorf("evicted status phase %s reason %q message %q", got.Phase, got.Reason, got.Message)
	}
	c := findCondition(got.Conditions, v1.DisruptionTarget)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet || c.Message != "The node was low on resource: memory." || c.ObservedGeneration != 4 {
		t.Errorf("DisruptionTarget condition %+v", c)
	}
	if c != nil && !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("DisruptionTarget transition time %v; want now", c.LastTransitionTime)
	}
}
