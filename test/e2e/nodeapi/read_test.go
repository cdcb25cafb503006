//go:build e2e

package nodeapie2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestReadEndpoints reads every read endpoint as a client does, with
// upstream's paths and shapes, on the secure port and (the read-only ones)
// on the read-only port; the healthz port serves /healthz only.
func TestReadEndpoints(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	pod := n.RunPod("reader", map[string]string{"app": "echo started; sleep 100000"})

	var list v1.PodList
	for _, base := range []string{n.Secure, n.ReadOnly} {
		code, body := Do(t, n.Admin, http.MethodGet, base+"/pods", nil)
		if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || list.Kind != "PodList" || len(list.Items) != 1 {
			t.Errorf("GET %s/pods: %d %v %s", base, code, err, body)
		}
	}
	code, body := n.Get("/runningpods/")
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Items) != 1 || list.Items[0].UID != pod.UID ||
		len(list.Items[0].Spec.Containers) != 1 || list.Items[0].Spec.Containers[0].Name != "app" {
		t.Errorf("GET /runningpods/: %d %v %s", code, err, body)
	}
	var spec map[string]any
	if code, body := n.Get("/spec/"); json.Unmarshal([]byte(body), &spec) != nil || code != 200 || spec["num_cores"].(float64) < 1 || spec["boot_id"] == "" {
		t.Errorf("GET /spec/: %d %s", code, body)
	}

	// Stats need the stats plugin's first sample.
	var summary statsapi.Summary
	n.Eventually("/stats/summary has the pod", func() (bool, string) {
		code, body := n.Get("/stats/summary")
		if code != 200 || json.Unmarshal([]byte(body), &summary) != nil {
			return false, body
		}
		for _, p := range summary.Pods {
			if p.PodRef.UID == string(pod.UID) && len(p.Containers) == 1 {
				return true, ""
			}
		}
		return false, body
	})
	if summary.Node.NodeName != nodeName {
		t.Errorf("summary of node %q", summary.Node.NodeName)
	}

	for path, wants := range map[string][]string{
		"/metrics": {"kubelet_running_pods 1", "kubelet_running_containers{container_state=\"running\"} 1",
			"kubelet_pod_start_duration_seconds_count 1", "kubelet_pleg_relist_duration_seconds_bucket",
			`kubelet_runtime_operations_total{operation_type="run_podsandbox"} 1`, `kubelet_node_name{node="` + nodeName + `"} 1`,
			`kubelet_cgroup_manager_duration_seconds_count{operation_type="create"}`,
			`kubelet_working_pods{config="desired",lifecycle="sync",static="true"} 1`, `kubelet_desired_pods{static="true"} 1`,
			`microlet_plugin_up{kind="stats",name="default"} 1`, `microlet_plugin_restarts_total{kind="cgroup",name="default"} 0`,
			`microlet_plugin_swaps_total{kind="eviction",name="kubelet"} 0`,
			`microlet_plugin_call_duration_seconds_bucket{kind="stats",method="/microlet.stats.v1.StatsService/GetSummary",name="default"`,
			`kubelet_http_requests_total{long_running="false",method="GET",path="pods",server_type="readwrite"}`,
			"process_resident_memory_bytes", "go_goroutines"},
		"/metrics/cadvisor": {`container_cpu_usage_seconds_total{container="app",cpu="total",id=`, `pod="reader-` + nodeName + `"`,
			"container_memory_working_set_bytes{", "machine_cpu_cores{", "container_scrape_error 0"},
		"/metrics/resource": {`container_cpu_usage_seconds_total{container="app",namespace="default",pod="reader-` + nodeName + `"}`,
			"node_memory_working_set_bytes", "resource_scrape_error 0"},
		"/metrics/probes": {""},
	} {
		code, body := n.Get(path)
		if code != 200 {
			t.Errorf("GET %s: %d", path, code)
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q", path, want)
			}
		}
	}

	var configz struct {
		Kubelet  map[string]any `json:"kubeletconfig"`
		Microlet map[string]any `json:"microlet"`
	}
	if code, body := n.Get("/configz"); json.Unmarshal([]byte(body), &configz) != nil || code != 200 ||
		configz.Kubelet["readOnlyPort"] == float64(0) || configz.Microlet["node_name"] != nodeName {
		t.Errorf("GET /configz: %d %s", code, body)
	}

	// /logs/ serves the node log directory.
	if err := os.WriteFile(filepath.Join(n.NodeLogs, "node.log"), []byte("node log line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := n.Get("/logs/node.log"); code != 200 || body != "node log line\n" {
		t.Errorf("GET /logs/node.log: %d %q", code, body)
	}
	if code, body := n.Get("/logs/"); code != 200 || !strings.Contains(body, "node.log") {
		t.Errorf("GET /logs/: %d %q", code, body)
	}

	// The read-only port: no configz, no debugging; the healthz port:
	// /healthz only.
	for _, tc := range []struct {
		url  string
		code int
	}{
		{n.ReadOnly + "/healthz", 200}, {n.ReadOnly + "/stats/summary", 200}, {n.ReadOnly + "/metrics/cadvisor", 200},
		{n.ReadOnly + "/configz", 404}, {n.ReadOnly + "/logs/node.log", 405}, {n.ReadOnly + "/runningpods/", 405},
		{"http://" + n.HealthzAddr + "/healthz", 200}, {"http://" + n.HealthzAddr + "/healthz/syncloop", 200},
		{"http://" + n.HealthzAddr + "/pods", 404}, {"http://" + n.HealthzAddr + "/metrics", 404},
		{"http://" + n.HealthzAddr + "/debug/pprof/", 404},
	} {
		if code, body := Do(t, http.DefaultClient, http.MethodGet, tc.url, nil); code != tc.code {
			t.Errorf("GET %s = %d %q, want %d", tc.url, code, body, tc.code)
		}
	}
}
