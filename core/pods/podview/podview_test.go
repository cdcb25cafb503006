package podview

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
)

func TestResourceList(t *testing.T) {
	got := ResourceList(v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("250m"),
		v1.ResourceMemory:           resource.MustParse("64Mi"),
		v1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
		"hugepages-2Mi":             resource.MustParse("4Mi"),
		"example.com/gpu":           resource.MustParse("2"),
	})
	if got.GetCpuMillis() != 250 || got.GetMemoryBytes() != 64<<20 || got.GetEphemeralStorageBytes() != 1<<30 {
		t.Errorf("cpu/memory/storage = %d/%d/%d", got.GetCpuMillis(), got.GetMemoryBytes(), got.GetEphemeralStorageBytes())
	}
	if got.Other["hugepages-2Mi"] != 4<<20 || got.Other["example.com/gpu"] != 2 {
		t.Errorf("other = %v", got.Other)
	}
	// An absent resource stays unset: QoS rules tell "no request" from zero.
	onlyCPU := ResourceList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("0")})
	if onlyCPU.CpuMillis == nil || *onlyCPU.CpuMillis != 0 || onlyCPU.MemoryBytes != nil {
		t.Errorf("presence lost: %v", onlyCPU)
	}
	if ResourceList(nil) != nil {
		t.Error("empty list should be nil")
	}
}

func TestIsCriticalAndPriority(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	tests := []struct {
		name      string
		source    string
		priority  *int32
		className string
		critical  bool
		want      int32
	}{
		{"file pods are static, hence critical", "file", nil, "", true, 0},
		{"url pods are static, hence critical", "http", nil, "", true, 0},
		{"pushed pods are not static", "push", nil, "", false, 0},
		{"pushed system-node-critical", "push", nil, "system-node-critical", true, 2000001000},
		{"pushed system-cluster-critical", "push", nil, "system-cluster-critical", true, 2000000000},
		{"explicit priority wins over the class name", "push", prio(10), "system-node-critical", false, 10},
		{"api pod with high priority", "api", prio(2000000000), "", true, 2000000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{podspec.ConfigSourceAnnotationKey: tt.source}},
				Spec:       v1.PodSpec{Priority: tt.priority, PriorityClassName: tt.className},
			}
			if got := IsCritical(pod); got != tt.critical {
				t.Errorf("IsCritical = %v, want %v", got, tt.critical)
			}
			if got := Priority(pod); got != tt.want {
				t.Errorf("Priority = %d, want %d", got, tt.want)
			}
		})
	}
}

type fakePaths struct{}

func (fakePaths) EmptyDirPath(pod *v1.Pod, volume string) string {
	return "/root/pods/" + string(pod.UID) + "/volumes/kubernetes.io~empty-dir/" + volume
}
func (fakePaths) LogDirectory(pod *v1.Pod) string { return "/var/log/pods/x" }

func TestPodView(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	limit := resource.MustParse("100Mi")
	started := time.Unix(1700000000, 0)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "default",
			Annotations: map[string]string{podspec.ConfigSourceAnnotationKey: "push"}},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "proxy", Image: "p", RestartPolicy: &always}, {Name: "setup", Image: "s"}},
			Containers: []v1.Container{{Name: "app", Image: "a", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}}}},
			Volumes: []v1.Volume{
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
			},
		},
	}
	runtime := &container.PodStatus{
		Sandboxes:  []*container.SandboxStatus{{ID: "sb2", IPs: []string{"10.88.0.5"}}, {ID: "sb1"}},
		Containers: []*container.ContainerStatus{{ID: "c2", Name: "app", State: container.StateRunning, RestartCount: 3, StartedAt: started}, {ID: "c1", Name: "app", State: container.StateExited}},
	}
	apiStatus := &v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable}
	view := Pod(pod, apiStatus, runtime, Extra{CgroupParent: "/kubepods/burstable/podu1"}, fakePaths{})

	if view.GetCritical() || view.GetSource() != "push" || view.GetPhase() != "Running" || view.GetQosClass() != "Burstable" {
		t.Errorf("header: %v", view)
	}
	if !view.InitContainers[0].GetRestartable() || view.InitContainers[1].GetRestartable() {
		t.Error("only the init container with restartPolicy Always is a sidecar")
	}
	app := view.Containers[0]
	if app.GetContainerId() != "c2" || app.GetState() != "running" || app.GetRestartCount() != 3 || !app.GetStartedAt().AsTime().Equal(started) {
		t.Errorf("app should carry the newest instance: %v", app)
	}
	if app.GetResources().GetRequests().GetMemoryBytes() != 10<<20 || app.GetPorts()[0].GetName() != "http" {
		t.Errorf("app spec: %v", app)
	}
	if view.GetSandboxId() != "sb2" || len(view.GetPodIps()) != 1 || view.GetPodIps()[0] != "10.88.0.5" {
		t.Errorf("sandbox/ips: %s %v", view.GetSandboxId(), view.GetPodIps())
	}
	if len(view.Volumes) != 2 || view.Volumes[0].GetHostPath() != "/root/pods/u1/volumes/kubernetes.io~empty-dir/scratch" ||
		view.Volumes[0].GetSizeLimitBytes() != 100<<20 || view.Volumes[1].GetHostPath() != "/srv" {
		t.Errorf("volumes: %v", view.Volumes)
	}
	if view.GetTerminationGracePeriodSeconds() != 30 || view.GetCgroupParent() != "/kubepods/burstable/podu1" || view.GetLogDirectory() != "/var/log/pods/x" {
		t.Errorf("grace/cgroup/log: %v", view)
	}
	// The cgroup plugin's decision wins over a stale API status.
	if got := Pod(pod, apiStatus, runtime, Extra{QOSClass: "Guaranteed"}, nil).GetQosClass(); got != "Guaranteed" {
		t.Errorf("qos = %s", got)
	}
}
