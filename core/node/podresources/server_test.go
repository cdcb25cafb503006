package podresources

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/microlet/microlet/sdk/nodefacts"
)

// The server over its real socket, read with the upstream gRPC client.
func TestServer(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "gpu", Namespace: "ml"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}, {Name: "sidecar", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	// ended has stopped: not listed, but Get still finds it, as the
	// kubelet's pod manager does.
	ended := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2", Name: "done", Namespace: "ml"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "app"}},
	}}
	reg := prometheus.NewPedanticRegistry()
	opts := Options{
		ActivePods: func() []*v1.Pod { return []*v1.Pod{pod} },
		Pods:       func() []*v1.Pod { return []*v1.Pod{ended, pod} },
		Registerer: reg,
		ContainerDevices: func(uid types.UID, c string) map[string]map[int64][]string {
			if uid == "u1" && c == "app" {
				return map[string]map[int64][]string{"vendor.example/gpu": {0: {"gpu0"}, -1: {"gpu9"}}}
			}
			return nil
		},
		HealthyDevices: func() map[string]map[int64][]string {
			return map[string]map[int64][]string{"vendor.example/gpu": {0: {"gpu0", "gpu1"}}}
		},
		NoNUMANode: -1,
		ContainerCPUs: func(uid types.UID, c string) []int64 {
			if c == "app" {
				return []int64{1}
			}
			return nil
		},
		AllocatableCPUs: func() []int64 { return []int64{1} },
		ContainerMemory: func(uid types.UID, c string) []nodefacts.MemoryBlock {
			if c == "app" {
				return []nodefacts.MemoryBlock{{NUMAAffinity: []int{0}, Type: "memory", Size: 1 << 30}, {NUMAAffinity: []int{0, 1}, Type: "hugepages-2Mi", Size: 4 << 20}}
			}
			return nil
		},
		AllocatableMemory: func() []nodefacts.MemoryBlock {
			return []nodefacts.MemoryBlock{{NUMAAffinity: []int{0}, Type: "memory", Size: 3 << 30}}
		},
	}
	socket := SocketPath(t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, socket, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := podresourcesv1.NewPodResourcesListerClient(conn)
	var list *podresourcesv1.ListPodResourcesResponse
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if list, err = client.List(t.Context(), &podresourcesv1.ListPodResourcesRequest{}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list.GetPodResources()) != 1 {
		t.Fatalf("List: %v", list)
	}
	p := list.GetPodResources()[0]
	var names []string
	for _, c := range p.GetContainers() {
		names = append(names, c.GetName())
	}
	if p.GetName() != "gpu" || p.GetNamespace() != "ml" || !slices.Equal(names, []string{"sidecar", "app"}) {
		t.Fatalf("List: %v; want the sidecar and app of ml/gpu", p)
	}
	app := p.GetContainers()[1]
	devs := app.GetDevices()
	if !slices.Equal(app.GetCpuIds(), []int64{1}) || len(devs) != 2 ||
		devs[0].GetTopology() != nil || !slices.Equal(devs[0].GetDeviceIds(), []string{"gpu9"}) ||
		devs[1].GetTopology().GetNodes()[0].GetID() != 0 || !slices.Equal(devs[1].GetDeviceIds(), []string{"gpu0"}) {
		t.Fatalf("app: %v; want CPU 1, gpu9 without topology and gpu0 on NUMA node 0", app)
	}
	if mem := app.GetMemory(); len(mem) != 2 || mem[0].GetMemoryType() != "memory" || mem[0].GetSize() != 1<<30 || len(mem[0].GetTopology().GetNodes()) != 1 ||
		mem[1].GetMemoryType() != "hugepages-2Mi" || len(mem[1].GetTopology().GetNodes()) != 2 || mem[1].GetTopology().GetNodes()[1].GetID() != 1 {
		t.Fatalf("app's memory: %v; want 1Gi of memory on node 0 and 4Mi of 2Mi hugepages on nodes 0 and 1", mem)
	}
	if mem := p.GetContainers()[0].GetMemory(); mem != nil {
		t.Fatalf("the sidecar's memory: %v; want none", mem)
	}
	if _, err := client.Get(t.Context(), &podresourcesv1.GetPodResourcesRequest{PodName: "nope", PodNamespace: "ml"}); err == nil {
		t.Fatal("Get of an unknown pod succeeded")
	}
	got, err := client.Get(t.Context(), &podresourcesv1.GetPodResourcesRequest{PodName: "gpu", PodNamespace: "ml"})
	if err != nil || len(got.GetPodResources().GetContainers()) != 2 {
		t.Fatalf("Get: %v, %v", got, err)
	}
	if got, err := client.Get(t.Context(), &podresourcesv1.GetPodResourcesRequest{PodName: "done", PodNamespace: "ml"}); err != nil || got.GetPodResources().GetName() != "done" {
		t.Fatalf("Get of the ended pod: %v, %v", got, err)
	}
	alloc, err := client.GetAllocatableResources(t.Context(), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || !slices.Equal(alloc.GetCpuIds(), []int64{1}) || len(alloc.GetDevices()) != 1 || len(alloc.GetDevices()[0].GetDeviceIds()) != 2 ||
		len(alloc.GetMemory()) != 1 || alloc.GetMemory()[0].GetSize() != 3<<30 {
		t.Fatalf("GetAllocatableResources: %v, %v", alloc, err)
	}
	// The kubelet's counters: one List (the retries above that failed
	// never reached the server), three Gets of which one failed, one
	// GetAllocatableResources.
	want := `
# HELP kubelet_pod_resources_endpoint_errors_get Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_errors_get counter
kubelet_pod_resources_endpoint_errors_get{server_api_version="v1"} 1
# HELP kubelet_pod_resources_endpoint_requests_get Number of requests to the PodResource Get endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_get counter
kubelet_pod_resources_endpoint_requests_get{server_api_version="v1"} 3
# HELP kubelet_pod_resources_endpoint_requests_get_allocatable Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_get_allocatable counter
kubelet_pod_resources_endpoint_requests_get_allocatable{server_api_version="v1"} 1
# HELP kubelet_pod_resources_endpoint_requests_list Number of requests to the PodResource List endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_list counter
kubelet_pod_resources_endpoint_requests_list{server_api_version="v1"} 1
# HELP kubelet_pod_resources_endpoint_requests_total Cumulative number of requests to the PodResource endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_total counter
kubelet_pod_resources_endpoint_requests_total{server_api_version="v1"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if filepath.Base(socket) != "kubelet.sock" || filepath.Base(filepath.Dir(socket)) != "pod-resources" {
		t.Fatalf("socket %s, want <root_dir>/pod-resources/kubelet.sock", socket)
	}
}
