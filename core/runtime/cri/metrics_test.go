package cri

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestOperationType(t *testing.T) {
	// The kubelet's names (pkg/kubelet/kuberuntime/instrumented_services.go).
	for method, want := range map[string]string{
		"/runtime.v1.RuntimeService/Version":                  "version",
		"/runtime.v1.RuntimeService/RunPodSandbox":            "run_podsandbox",
		"/runtime.v1.RuntimeService/PodSandboxStatus":         "podsandbox_status",
		"/runtime.v1.RuntimeService/ListPodSandboxStats":      "list_podsandbox_stats",
		"/runtime.v1.RuntimeService/ListPodSandboxMetrics":    "list_podsandbox_metrics",
		"/runtime.v1.RuntimeService/CreateContainer":          "create_container",
		"/runtime.v1.RuntimeService/UpdateContainerResources": "update_container",
		"/runtime.v1.RuntimeService/ExecSync":                 "exec_sync",
		"/runtime.v1.RuntimeService/GetContainerEvents":       "get_container_events",
		"/runtime.v1.RuntimeService/ListMetricDescriptors":    "list_metric_descriptors",
		"/runtime.v1.ImageService/ImageFsInfo":                "image_fs_info",
		"/runtime.v1.ImageService/PullImage":                  "pull_image",
	} {
		if got := operationType(method); got != want {
			t.Errorf("operationType(%q) = %q; want %q", method, got, want)
		}
	}
}

func TestOperationsAreCounted(t *testing.T) {
	s := startFake(t, newFakeRuntime())
	reg := prometheus.NewPedanticRegistry()
	c := connect(t, s, Config{Metrics: reg})
	ctx := context.Background()
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{}, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.StopPodSandbox(ctx, "sb-42"); err == nil {
		t.Fatal("StopPodSandbox of an unknown sandbox succeeded")
	}
	want := `
# HELP kubelet_runtime_operations_errors_total Cumulative number of runtime operation errors by operation type.
# TYPE kubelet_runtime_operations_errors_total counter
kubelet_runtime_operations_errors_total{operation_type="stop_podsandbox"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_runtime_operations_errors_total"); err != nil {
		t.Error(err)
	}
	for op, n := range map[string]float64{"version": 1, "image_fs_info": 1, "run_podsandbox": 1, "stop_podsandbox": 1, "get_container_events": 1} {
		if got := testutil.ToFloat64(c.ops.total.WithLabelValues(op)); got != n {
			t.Errorf("%s counted %v times; want %v", op, got, n)
		}
	}
	if got := testutil.CollectAndCount(reg, "kubelet_runtime_operations_duration_seconds"); got != 5 {
		t.Errorf("%d duration series; want one per operation type (5)", got)
	}
	// The default handler is "", as upstream labels it.
	if got := testutil.CollectAndCount(reg, "kubelet_run_podsandbox_duration_seconds"); got != 1 {
		t.Errorf("%d run_podsandbox duration series; want 1", got)
	}
	if got := testutil.CollectAndCount(reg, "kubelet_run_podsandbox_errors_total"); got != 0 {
		t.Errorf("%d run_podsandbox error series after a successful run; want 0", got)
	}
}
