package podruntime

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

// testPod is a defaulted pod with regular containers "a" and "b" and the
// changes applied.
func testPod(changes ...func(*v1.Pod)) *v1.Pod {
	grace := int64(30)
	enable := true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     v1.DNSClusterFirst,
			EnableServiceLinks:            &enable,
			SecurityContext:               &v1.PodSecurityContext{},
			NodeName:                      "node-1",
			Containers: []v1.Container{
				testContainer("a"),
				testContainer("b"),
			},
		},
	}
	for _, change := range changes {
		change(pod)
	}
	return pod
}

func testContainer(name string) v1.Container {
	return v1.Container{
		Name:                     name,
		Image:                    "localhost/busybox:1",
		ImagePullPolicy:          v1.PullIfNotPresent,
		TerminationMessagePath:   v1.TerminationMessagePathDefault,
		TerminationMessagePolicy: v1.TerminationMessageReadFile,
	}
}

func sidecar(name string) v1.Container {
	c := testContainer(name)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func withRestartPolicy(p v1.RestartPolicy) func(*v1.Pod) {
	return func(pod *v1.Pod) { pod.Spec.RestartPolicy = p }
}

func withInitContainers(cs ...v1.Container) func(*v1.Pod) {
	return func(pod *v1.Pod) { pod.Spec.InitContainers = cs }
}

func withHostNetwork(pod *v1.Pod) { pod.Spec.HostNetwork = true }

// readySandbox is a ready sandbox of the given attempt with an address.
func readySandbox(id string, attempt uint32) *container.SandboxStatus {
	return &container.SandboxStatus{ID: id, State: container.SandboxReady, Attempt: attempt, IPs: []string{"10.88.0.5"}}
}

func notReadySandbox(id string, attempt uint32) *container.SandboxStatus {
	return &container.SandboxStatus{ID: id, State: container.SandboxNotReady, Attempt: attempt}
}

// statusOf builds a pod status, newest sandbox and containers first.
func statusOf(sandboxes []*container.SandboxStatus, containers ...*container.ContainerStatus) *container.PodStatus {
	return &container.PodStatus{UID: "uid-1", Name: "web", Namespace: "default", Sandboxes: sandboxes, Containers: containers}
}

func running(c v1.Container, id string) *container.ContainerStatus {
	return &container.ContainerStatus{ID: id, Name: c.Name, State: container.StateRunning, Hash: containerHash(&c)}
}

func exited(c v1.Container, id string, code int32) *container.ContainerStatus {
	return &container.ContainerStatus{ID: id, Name: c.Name, State: container.StateExited, ExitCode: code, Hash: containerHash(&c),
		FinishedAt: time.Unix(1000, 0)}
}

func inState(c v1.Container, id string, state container.State) *container.ContainerStatus {
	return &container.ContainerStatus{ID: id, Name: c.Name, State: state, Hash: containerHash(&c)}
}

// fakeProbes answers per container ID: failed IDs must restart, unstarted
// IDs have not passed their startup probe.
type fakeProbes struct {
	failed    map[string]*int64
	unstarted map[string]bool
}

func (p fakeProbes) ShouldRestart(id string) (bool, string, *int64) {
	grace, ok := p.failed[id]
	if !ok {
		return false, "", nil
	}
	return true, "Container failed liveness probe", grace
}

func (p fakeProbes) Started(id string) bool { return !p.unstarted[id] }

// newTestManager is a Manager without a runtime, on temporary directories,
// for the parts that do not talk to the runtime.
func newTestManager(t *testing.T, change ...func(*Options)) *Manager {
	t.Helper()
	dir := t.TempDir()
	opts := Options{
		NodeName:         "node-1",
		NodeIPs:          []string{"192.0.2.10"},
		RootDir:          dir + "/root",
		PodLogsDir:       dir + "/pods-logs",
		ContainerLogsDir: dir + "/containers-logs",
		DNS:              DNSConfig{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
		Logger:           hclog.NewNullLogger(),
		NodeAllocatable: func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
		},
	}
	for _, c := range change {
		c(&opts)
	}
	m, err := newManager(opts)
	if err != nil {
		t.Fatalf("newManager: %v", err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func mustIPs(t *testing.T, addrs ...string) []net.IP {
	t.Helper()
	ips, err := parseIPs(addrs)
	if err != nil {
		t.Fatal(err)
	}
	return ips
}
