package status

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func conditionSummary(s v1.PodStatus) map[v1.PodConditionType]v1.ConditionStatus {
	out := map[v1.PodConditionType]v1.ConditionStatus{}
	for _, c := range s.Conditions {
		out[c.Type] = c.Status
	}
	return out
}

func TestPodStatusOfARunningPod(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, []string{"init", "sidecar:proxy"}, "app", "worker")
	pod.Generation = 3
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
	pod.Spec.Containers[1].StartupProbe = &v1.Probe{}
	pod.Spec.InitContainers[1].StartupProbe = &v1.Probe{}
	runtime := runtimeStatus([]string{"fd00::5", "10.1.0.5"},
		exited("c-init", "init", 1, 0, "Completed"),
		instance("c-proxy", "proxy", container.StateRunning, 3),
		instance("c-app", "app", container.StateRunning, 5),
		instance("c-worker", "worker", container.StateRunning, 5),
	)
	started := metav1.NewTime(at(-100))
	g := &Generator{
		RuntimeName: "containerd",
		NodeIPs:     []string{"192.168.1.10", "fd00::10"},
		Readiness:   probeResults{"c-app": true},
		Startup:     probeResults{"c-proxy": true},
	}
	s := g.PodStatus(pod, runtime, v1.PodStatus{StartTime: &started}, false)

	if s.Phase != v1.PodRunning {
		t.Errorf("phase %s; want Running", s.Phase)
	}
	if s.PodIP != "10.1.0.5" || len(s.PodIPs) != 2 || s.PodIPs[1].IP != "fd00::5" {
		t.Errorf("pod IPs %q %v; want the node's family (IPv4) first", s.PodIP, s.PodIPs)
	}
	if s.HostIP != "192.168.1.10" || len(s.HostIPs) != 2 || s.HostIPs[1].IP != "fd00::10" {
		t.Errorf("host IPs %q %v", s.HostIP, s.HostIPs)
	}
	if s.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("QoS %s; want BestEffort", s.QOSClass)
	}
	if s.StartTime == nil || !s.StartTime.Equal(&started) {
		t.Errorf("start time %v; want the previous one", s.StartTime)
	}
	byName := map[string]v1.ContainerStatus{}
	for _, c := range append(slices.Clone(s.ContainerStatuses), s.InitContainerStatuses...) {
		byName[c.Name] = c
	}
	for name, want := range map[string]struct{ ready, started bool }{
		"init":   {true, false},  // succeeded
		"proxy":  {true, true},   // startup probe passed, no readiness probe
		"app":    {true, true},   // readiness probe passed
		"worker": {false, false}, // startup probe not passed yet
	} {
		c := byName[name]
		if c.Ready != want.ready || c.Started == nil || *c.Started != want.started {
			t.Errorf("%s: ready=%v started=%v; want ready=%v started=%v", name, c.Ready, c.Started, want.ready, want.started)
		}
	}
	wantConditions := map[v1.PodConditionType]v1.ConditionStatus{
		v1.PodReadyToStartContainers: v1.ConditionTrue,
		v1.PodInitialized:            v1.ConditionTrue,
		v1.PodReady:                  v1.ConditionFalse,
		v1.ContainersReady:           v1.ConditionFalse,
		v1.PodScheduled:              v1.ConditionTrue,
	}
	if got := conditionSummary(s); !mapsEqual(got, wantConditions) {
		t.Errorf("conditions %v; want %v", got, wantConditions)
	}
	for _, c := range s.Conditions {
		if c.ObservedGeneration != 3 {
			t.Errorf("condition %s observed generation %d; want the pod's 3", c.Type, c.ObservedGeneration)
		}
	}

	// Once the worker's startup probe passes, the pod is ready.
	g.Startup = probeResults{"c-proxy": true, "c-worker": true}
	s = g.PodStatus(pod, runtime, s, false)
	if got := conditionSummary(s); got[v1.PodReady] != v1.ConditionTrue || got[v1.ContainersReady] != v1.ConditionTrue {
		t.Errorf("conditions %v; want Ready and ContainersReady true", got)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestPodStatusPhaseRules(t *testing.T) {
	completed := runtimeStatus([]string{"10.1.0.5"}, exited("c1", "a", 1, 0, "Completed"))
	runningA := runtimeStatus([]string{"10.1.0.5"}, instance("c1", "a", container.StateRunning, 1))
	tests := []struct {
		name        string
		pod         *v1.Pod
		runtime     *container.PodStatus
		old         v1.PodStatus
		terminal    bool
		evict       bool
		wantPhase   v1.PodPhase
		wantReason  string
		wantMessage string
	}{
		{"terminal phase of the previous status sticks", testPod(v1.RestartPolicyAlways, nil, "a"), runningA,
			v1.PodStatus{Phase: v1.PodSucceeded, Reason: "Done", Message: "all done"}, false, false, v1.PodSucceeded, "Done", "all done"},
		{"terminal phase of the pod sticks", func() *v1.Pod {
			p := testPod(v1.RestartPolicyAlways, nil, "a")
			p.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu", Message: "Pod was rejected: cpu"}
			return p
		}(), runningA, v1.PodStatus{Phase: v1.PodRunning}, false, false, v1.PodFailed, "", ""},
		{"reason kept while the phase stays", testPod(v1.RestartPolicyAlways, nil, "a"), runningA,
			v1.PodStatus{Phase: v1.PodRunning, Reason: "Something", Message: "kept"}, false, false, v1.PodRunning, "Something", "kept"},
		{"reason dropped when the phase changes", testPod(v1.RestartPolicyNever, nil, "a"), completed,
			v1.PodStatus{Phase: v1.PodRunning, Reason: "Something", Message: "dropped"}, false, false, v1.PodSucceeded, "", ""},
		{"terminal pod completes", testPod(v1.RestartPolicyAlways, nil, "a"), completed, v1.PodStatus{}, true, false, v1.PodSucceeded, "", ""},
		{"evicted by a sync handler", testPod(v1.RestartPolicyAlways, nil, "a"), runningA, v1.PodStatus{}, false, true,
			v1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Generator{RuntimeName: "containerd"}
			if tt.evict {
				g.ShouldEvict = func(*v1.Pod) (bool, string, string) {
					return true, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
				}
			}
			s := g.PodStatus(tt.pod, tt.runtime, tt.old, tt.terminal)
			if s.Phase != tt.wantPhase || s.Reason != tt.wantReason || s.Message != tt.wantMessage {
				t.Errorf("phase %s reason %q message %q; want %s %q %q", s.Phase, s.Reason, s.Message, tt.wantPhase, tt.wantReason, tt.wantMessage)
			}
		})
	}
}

func TestPodStatusIPs(t *testing.T) {
	hostNetwork := testPod(v1.RestartPolicyAlways, nil, "a")
	hostNetwork.Spec.HostNetwork = true
	stopped := &container.PodStatus{Sandboxes: []*container.SandboxStatus{{ID: "sb", State: container.SandboxNotReady}}}
	tests := []struct {
		name    string
		pod     *v1.Pod
		runtime *container.PodStatus
		nodeIPs []string
		old     v1.PodStatus
		want    []string
	}{
		{"sandbox IP", testPod(v1.RestartPolicyAlways, nil, "a"), runtimeStatus([]string{"10.1.0.5"}), []string{"192.168.1.10"}, v1.PodStatus{}, []string{"10.1.0.5"}},
		{"IPv6 node prefers IPv6", testPod(v1.RestartPolicyAlways, nil, "a"), runtimeStatus([]string{"10.1.0.5", "fd00::5"}), []string{"fd00::10"}, v1.PodStatus{}, []string{"fd00::5", "10.1.0.5"}},
		{"one address per family, normalised", testPod(v1.RestartPolicyAlways, nil, "a"), runtimeStatus([]string{"010.001.000.005", "10.1.0.6"}), nil, v1.PodStatus{}, []string{"10.1.0.5"}},
		{"stopped pod keeps its IP", testPod(v1.RestartPolicyAlways, nil, "a"), stopped, nil, v1.PodStatus{PodIPs: []v1.PodIP{{IP: "10.1.0.5"}}}, []string{"10.1.0.5"}},
		{"host network pod gets the node's addresses", hostNetwork, runtimeStatus(nil), []string{"192.168.1.10", "fd00::10"}, v1.PodStatus{}, []string{"192.168.1.10", "fd00::10"}},
		{"no node addresses, no host IPs", hostNetwork, runtimeStatus(nil), nil, v1.PodStatus{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := (&Generator{RuntimeName: "containerd", NodeIPs: tt.nodeIPs}).PodStatus(tt.pod, tt.runtime, tt.old, false)
			var got []string
			for _, ip := range s.PodIPs {
				got = append(got, ip.IP)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pod IPs %v; want %v", got, tt.want)
			}
			if len(tt.want) > 0 && s.PodIP != tt.want[0] {
				t.Errorf("pod IP %q; want %q", s.PodIP, tt.want[0])
			}
		})
	}
}

func TestPodStatusConditionsCarriedOver(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	pod.Status.Conditions = []v1.PodCondition{
		{Type: "example.com/custom", Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionTrue}, // owned by the node agent: regenerated
	}
	old := v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet}}}
	s := (&Generator{RuntimeName: "containerd"}).PodStatus(pod, runtimeStatus([]string{"10.1.0.5"}), old, false)
	var types []v1.PodConditionType
	for _, c := range s.Conditions {
		types = append(types, c.Type)
	}
	want := []v1.PodConditionType{"example.com/custom", v1.DisruptionTarget, v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}
	if !slices.Equal(types, want) {
		t.Errorf("conditions %v; want %v", types, want)
	}
	if got := conditionSummary(s)[v1.PodReady]; got != v1.ConditionFalse {
		t.Errorf("Ready %s; want the generated False, not the pod's", got)
	}
}

func TestComputePodQOS(t *testing.T) {
	res := func(cpu, memory string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			l[v1.ResourceMemory] = resource.MustParse(memory)
		}
		return l
	}
	c := func(requests, limits v1.ResourceList) v1.Container {
		return v1.Container{Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}
	}
	tests := []struct {
		name       string
		containers []v1.Container
		inits      []v1.Container
		podLevel   *v1.ResourceRequirements
		want       v1.PodQOSClass
	}{
		{"nothing set", []v1.Container{{}}, nil, nil, v1.PodQOSBestEffort},
		{"only other resources", []v1.Container{c(v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, nil)}, nil, nil, v1.PodQOSBestEffort},
		{"zero requests", []v1.Container{c(res("0", "0"), nil)}, nil, nil, v1.PodQOSBestEffort},
		{"requests equal limits", []v1.Container{c(res("1", "1Gi"), res("1", "1Gi"))}, nil, nil, v1.PodQOSGuaranteed},
		{"requests equal limits everywhere", []v1.Container{c(res("1", "1Gi"), res("1", "1Gi"))}, []v1.Container{c(res("500m", "1Gi"), res("500m", "1Gi"))}, nil, v1.PodQOSGuaranteed},
		{"an init container without limits", []v1.Container{c(res("1", "1Gi"), res("1", "1Gi"))}, []v1.Container{{}}, nil, v1.PodQOSBurstable},
		{"requests below limits", []v1.Container{c(res("500m", "1Gi"), res("1", "1Gi"))}, nil, nil, v1.PodQOSBurstable},
		{"only a memory limit", []v1.Container{c(nil, res("", "1Gi"))}, nil, nil, v1.PodQOSBurstable},
		{"only requests", []v1.Container{c(res("100m", ""), nil)}, nil, nil, v1.PodQOSBurstable},
		{"pod-level guaranteed", []v1.Container{{}}, nil, &v1.ResourceRequirements{Requests: res("1", "1Gi"), Limits: res("1", "1Gi")}, v1.PodQOSGuaranteed},
		{"pod-level requests only", []v1.Container{c(res("1", "1Gi"), res("1", "1Gi"))}, nil, &v1.ResourceRequirements{Requests: res("1", "1Gi")}, v1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: tt.containers, InitContainers: tt.inits, Resources: tt.podLevel}}
			if got := ComputePodQOS(pod); got != tt.want {
				t.Errorf("ComputePodQOS = %s; want %s", got, tt.want)
			}
			pod.Status.QOSClass = v1.PodQOSGuaranteed
			if got := GetPodQOS(pod); got != v1.PodQOSGuaranteed {
				t.Errorf("GetPodQOS ignored the recorded class: %s", got)
			}
		})
	}
}

func TestReasonCache(t *testing.T) {
	c := NewReasonCache()
	c.Add("uid-1", "a", "ErrImagePull", "pull failed")
	c.Add("uid-1", "a", "ImagePullBackOff", "Back-off pulling image")
	c.Add("uid-2", "a", "CrashLoopBackOff", "other pod")
	if r, ok := c.Get("uid-1", "a"); !ok || r != (Reason{"ImagePullBackOff", "Back-off pulling image"}) {
		t.Errorf("Get = %+v, %v; want the latest reason", r, ok)
	}
	c.Remove("uid-1", "a")
	if _, ok := c.Get("uid-1", "a"); ok {
		t.Error("reason still there after Remove")
	}
	if r, ok := c.Get("uid-2", "a"); !ok || r.Message != "other pod" {
		t.Errorf("another pod's reason is gone: %+v, %v", r, ok)
	}
	for i := range maxReasonCacheEntries {
		c.Add("filler", string(rune('a'+i%26))+string(rune(i)), "r", "m")
	}
	if _, ok := c.Get("uid-2", "a"); ok {
		t.Errorf("the cache holds more than %d entries", maxReasonCacheEntries)
	}
}

func TestTerminalPhaseIsFinal(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: "default", UID: "u1"},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
	// Evicted, then its container exited 0 on SIGTERM.
	rs := &container.PodStatus{UID: "u1", Containers: []*container.ContainerStatus{{ID: "c1", Name: "c", State: container.StateExited, ExitCode: 0}}}
	old := v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}
	got := (&Generator{RuntimeName: "containerd"}).PodStatus(pod, rs, old, true)
	if got.Phase != v1.PodFailed || got.Reason != "Evicted" {
		t.Errorf("phase %s reason %q, want Failed/Evicted kept", got.Phase, got.Reason)
	}
}

// TestWithoutAProberContainersCountAsHavingNoProbes: with no probes plugin
// configured there is no prober, and a running container with probes is
// started and ready, as ARCHITECTURE.md's failure policy says.
func TestWithoutAProberContainersCountAsHavingNoProbes(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "app", "slow")
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
	pod.Spec.Containers[1].StartupProbe = &v1.Probe{}
	runtime := runtimeStatus([]string{"10.1.0.5"},
		instance("c-app", "app", container.StateRunning, 5),
		instance("c-slow", "slow", container.StateRunning, 5),
	)
	g := &Generator{RuntimeName: "containerd", NodeIPs: []string{"192.168.1.10"}}
	s := g.PodStatus(pod, runtime, v1.PodStatus{}, false)
	for _, c := range s.ContainerStatuses {
		if !c.Ready || c.Started == nil || !*c.Started {
			t.Errorf("%s: ready=%v started=%v; want both true without a prober", c.Name, c.Ready, c.Started)
		}
	}
	if conditionSummary(s)[v1.PodReady] != v1.ConditionTrue {
		t.Errorf("pod conditions %v; want Ready", conditionSummary(s))
	}
}

// fakeResizes reports a resize in progress for running containers and
// resources it makes up.
type fakeResizes struct{ running []string }

func (f *fakeResizes) Conditions(pod *v1.Pod, running func(string) bool) []v1.PodCondition {
	for _, c := range pod.Spec.Containers {
		if running(c.Name) {
			f.running = append(f.running, c.Name)
		}
	}
	return []v1.PodCondition{{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue}}
}

func (f *fakeResizes) ContainerResources(_ *v1.Pod, c *v1.Container, running bool) (*v1.ResourceRequirements, v1.ResourceList) {
	cpu := "1"
	if running {
		cpu = "2"
	}
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	return &v1.ResourceRequirements{Limits: l}, v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}
}

func TestResizeStatus(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "app", "done")
	runtime := runtimeStatus([]string{"10.1.0.5"},
		instance("c-app", "app", container.StateRunning, 5),
		instance("c-done", "done", container.StateExited, 5),
	)
	resizes := &fakeResizes{}
	g := &Generator{RuntimeName: "containerd", NodeIPs: []string{"192.168.1.10"}, Resizes: resizes}
	s := g.PodStatus(pod, runtime, v1.PodStatus{}, false)
	if conditionSummary(s)[v1.PodResizeInProgress] != v1.ConditionTrue || !slices.Equal(resizes.running, []string{"app"}) {
		t.Errorf("conditions %v, running %v; want PodResizeInProgress, only app running", conditionSummary(s), resizes.running)
	}
	for _, c := range s.ContainerStatuses {
		want := map[string]string{"app": "2", "done": "1"}[c.Name]
		if c.Resources == nil || !c.Resources.Limits.Cpu().Equal(resource.MustParse(want)) || !c.AllocatedResources.Cpu().Equal(resource.MustParse("3")) {
			t.Errorf("%s: resources %v allocated %v; want cpu %s and 3", c.Name, c.Resources, c.AllocatedResources, want)
		}
	}
}
