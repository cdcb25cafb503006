package nodeapi

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/core/nodeapi/healthz"
)

// fakePods are the sync loop's pods.
type fakePods []*v1.Pod

func (f fakePods) PodsWithStatus() []*v1.Pod { return f }

// fakeRuntime is a runtime with sandboxes and containers, and a streaming
// server URL for each streaming call.
type fakeRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	// statuses by container ID.
	statuses map[string]*runtimeapi.ContainerStatus
	exec     *runtimeapi.ExecSyncResponse
	// streamURL answers Exec, Attach and PortForward.
	streamURL string
	// last requests seen.
	execReq        *runtimeapi.ExecRequest
	portForwardReq *runtimeapi.PortForwardRequest
	execSyncCmd    []string
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		if filter.GetState() != nil && s.State != filter.GetState().State || !matches(s.Labels, filter.GetLabelSelector()) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if filter.GetState() != nil && c.State != filter.GetState().State || !matches(c.Labels, filter.GetLabelSelector()) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	s, ok := f.statuses[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: s}, nil
}

func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	f.execSyncCmd = cmd
	return f.exec, nil
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	f.execReq = req
	return &runtimeapi.ExecResponse{Url: f.streamURL}, nil
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return &runtimeapi.AttachResponse{Url: f.streamURL}, nil
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.portForwardReq = req
	return &runtimeapi.PortForwardResponse{Url: f.streamURL}, nil
}

// podLabels are the labels a node agent puts on a pod's sandbox and
// containers.
func podLabels(pod *v1.Pod, container string) map[string]string {
	l := map[string]string{kubelettypes.KubernetesPodUIDLabel: string(pod.UID), kubelettypes.KubernetesPodNameLabel: pod.Name,
		kubelettypes.KubernetesPodNamespaceLabel: pod.Namespace}
	if container != "" {
		l[kubelettypes.KubernetesContainerNameLabel] = container
	}
	return l
}

// webPod is a pod "web" in "default" with one container "app".
func webPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-web")},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", Image: "busybox", ContainerID: "containerd://c2",
			State:                v1.ContainerState{Running: &v1.ContainerStateRunning{}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://c1", ExitCode: 1}},
		}}},
	}
}

// testHandlers are handlers over fakes with the default config, adjusted
// by edit.
func testHandlers(t *testing.T, pods fakePods, rt *fakeRuntime, edit func(*config.Config)) *handlers {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.PodLogsDir = t.TempDir()
	if edit != nil {
		edit(cfg)
	}
	return newHandlers(Options{
		Config:       func() *config.Config { return cfg },
		Healthz:      healthz.NewHealthz(),
		Pods:         pods,
		Runtime:      rt,
		Stats:        stats.New(nil, nil),
		Capacity:     &machine.Capacity{CPUMillis: 2000, MemoryBytes: 1 << 30},
		Metrics:      prometheus.NewRegistry(),
		ProbeMetrics: prometheus.NewRegistry(),
	}, hclog.NewNullLogger())
}

// do serves one request through the secure port's router, with the
// debugging routes the handlers' config turns on (all but contention
// profiling by default).
func (h *handlers) do(t *testing.T, method, target string, body io.Reader) *httptest.ResponseRecorder {
	t.Helper()
	return httptestRecorder(h, httptest.NewRequest(method, target, body))
}

func assertResponse(t *testing.T, rec *httptest.ResponseRecorder, code int, body string) {
	t.Helper()
	if rec.Code != code || !strings.Contains(rec.Body.String(), body) {
		t.Errorf("answer %d %q, want %d containing %q", rec.Code, rec.Body.String(), code, body)
	}
}
