package podruntime

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func TestGeneratePodStatus(t *testing.T) {
	m := newTestManager(t)
	message := filepath.Join(t.TempDir(), "msg")
	if err := os.WriteFile(message, []byte("done"), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := func(name string) map[string]string {
		return map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": name}
	}
	event := &runtimeapi.ContainerEventResponse{
		ContainerId: "c2",
		CreatedAt:   3000,
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{
			Id:        "s1",
			Metadata:  &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: 1},
			State:     runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: 1000,
			Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.5", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::5"}}},
		},
		ContainersStatuses: []*runtimeapi.ContainerStatus{
			{
				Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "a"}, State: runtimeapi.ContainerState_CONTAINER_EXITED,
				CreatedAt: 1500, StartedAt: 1600, FinishedAt: 1700, ExitCode: 2, Reason: "Error",
				Image: &runtimeapi.ImageSpec{Image: "localhost/busybox:1"}, ImageRef: "sha256:abc",
				Labels: labels("a"),
				Annotations: map[string]string{annotationContainerHash: "1f", annotationContainerRestartCount: "3",
					annotationContainerTerminationMessagePath: "/dev/termination-log"},
				Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: message}},
			},
			{
				Id: "c2", Metadata: &runtimeapi.ContainerMetadata{Name: "b", Attempt: 1}, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
				CreatedAt: 2000, StartedAt: 2100, Labels: labels("b"), Annotations: map[string]string{annotationContainerRestartCount: "1"},
			},
		},
	}
	got, err := m.GeneratePodStatus(event)
	if err != nil {
		t.Fatal(err)
	}
	want := &container.PodStatus{
		UID: "uid-1", Name: "web", Namespace: "default", Timestamp: time.Unix(0, 3000),
		Sandboxes: []*container.SandboxStatus{{ID: "s1", State: container.SandboxReady, CreatedAt: time.Unix(0, 1000), Attempt: 1, IPs: []string{"10.88.0.5", "fd00::5"}}},
		Containers: []*container.ContainerStatus{
			{ID: "c2", Name: "b", SandboxID: "s1", State: container.StateRunning, CreatedAt: time.Unix(0, 2000), StartedAt: time.Unix(0, 2100),
				RestartCount: 1, Attempt: 1},
			{ID: "c1", Name: "a", SandboxID: "s1", State: container.StateExited, CreatedAt: time.Unix(0, 1500), StartedAt: time.Unix(0, 1600),
				FinishedAt: time.Unix(0, 1700), ExitCode: 2, Reason: "Error", Message: "done", Image: "localhost/busybox:1",
				ImageRef: "sha256:abc", ImageID: "sha256:abc", Hash: 0x1f, RestartCount: 3},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GeneratePodStatus (-want +got):\n%s", diff)
	}
	if _, err := m.GeneratePodStatus(&runtimeapi.ContainerEventResponse{ContainerId: "c9"}); err == nil {
		t.Error("an event without a sandbox status was accepted")
	}
}

func TestSandboxIPs(t *testing.T) {
	for _, tc := range []struct {
		network *runtimeapi.PodSandboxNetworkStatus
		want    []string
	}{
		{nil, nil},
		{&runtimeapi.PodSandboxNetworkStatus{}, nil},
		{&runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"}, []string{"10.0.0.1"}},
		{&runtimeapi.PodSandboxNetworkStatus{Ip: "garbage"}, nil},
		{&runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1", AdditionalIps: []*runtimeapi.PodIP{{Ip: "bad"}}}, nil},
	} {
		if got := sandboxIPs(&runtimeapi.PodSandboxStatus{Network: tc.network}); !cmp.Equal(got, tc.want) {
			t.Errorf("sandboxIPs(%v) = %v, want %v", tc.network, got, tc.want)
		}
	}
}
