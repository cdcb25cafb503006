package stats

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/microlet/microlet/core/pluginhost"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// plugin is a stats plugin with a fixed answer, which records what it
// was asked.
type plugin struct {
	mu       sync.Mutex
	sample   *Sample
	err      error
	requests []*statsv1.GetSummaryRequest
}

func (p *plugin) Configure(context.Context, *struct{}, *sdk.Host) error { return nil }

func (p *plugin) GetSummary(_ context.Context, req *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, req)
	if p.err != nil {
		return nil, nil, p.err
	}
	return p.sample.Node, p.sample.Pods, nil
}

func (p *plugin) lastRequest() *statsv1.GetSummaryRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		return nil
	}
	return p.requests[len(p.requests)-1]
}

// served serves p in-process and returns a provider that reaches it.
func served(t *testing.T, p *plugin) *Provider {
	t.Helper()
	h := sdktest.InProcess(t, sdk.Info{Kind: sdk.KindStats, Name: "fake", Version: "0.0.1"}, p)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	return New(ConnSource(h.Conn()), hclog.NewNullLogger())
}

// unconfigured is a provider over a plugin host that runs no stats plugin.
func unconfigured(t *testing.T) *Provider {
	t.Helper()
	host, err := pluginhost.New(pluginhost.Options{Dir: t.TempDir(), SocketDir: filepath.Join(t.TempDir(), "sockets")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := host.Close(context.Background()); err != nil {
			t.Errorf("close the plugin host: %v", err)
		}
	})
	return New(HostPlugin(host), hclog.NewNullLogger())
}

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, target, nil))
	return rec
}

func TestSummaryHandler(t *testing.T) {
	p := &plugin{sample: fullSample()}
	provider := served(t, p)
	h := provider.SummaryHandler()

	cpuAndMemory := toSummary(fullSample())
	onlyCPUAndMemory(cpuAndMemory)
	tests := []struct {
		name, method, target string
		wantOnly             bool
		want                 *statsapi.Summary
	}{
		{"GET", http.MethodGet, "/stats/summary", false, fullSummary()},
		{"POST, as the kubelet allows", http.MethodPost, "/stats/summary", false, fullSummary()},
		// The plugin answers in full here; the handler still holds the shape.
		{"only cpu and memory", http.MethodGet, "/stats/summary?only_cpu_and_memory=true", true, cpuAndMemory},
		{"only exactly \"true\" counts", http.MethodGet, "/stats/summary?only_cpu_and_memory=True", false, fullSummary()},
		{"only one value counts", http.MethodGet, "/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true", false, fullSummary()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, h, tt.method, tt.target)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%s %s: %d %s: %s", tt.method, tt.target, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if !strings.HasPrefix(rec.Body.String(), "{\n \"node\": {\n  \"nodeName\": \"node-a\",") {
				t.Errorf("body is not indented by one space as the kubelet's: %.80q", rec.Body.String())
			}
			want, err := json.MarshalIndent(tt.want, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Body.String() != string(want) {
				t.Errorf("summary:\n%s\nwant:\n%s", rec.Body, want)
			}
			req := p.lastRequest()
			if req.GetOnlyCpuAndMemory() != tt.wantOnly || req.GetFresh() {
				t.Errorf("the plugin was asked %v; want only_cpu_and_memory %v and never fresh (the kubelet serves cached stats)", req, tt.wantOnly)
			}
		})
	}

	rec := get(t, h, http.MethodPut, "/stats/summary")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, POST" {
		t.Errorf("PUT: %d (Allow %q), want 405 allowing GET, POST", rec.Code, rec.Header().Get("Allow"))
	}
	rec = get(t, h, http.MethodGet, "/stats/summary?only_cpu_and_memory=%zz")
	if rec.Code != http.StatusInternalServerError || !strings.HasPrefix(rec.Body.String(), "Internal Error: parse form failed") {
		t.Errorf("bad query: %d %q, want the kubelet's 500", rec.Code, rec.Body)
	}
}

func TestSummaryHandlerErrors(t *testing.T) {
	tests := []struct {
		name     string
		provider func(t *testing.T) *Provider
		code     int
		body     string
	}{
		{"no stats plugin configured", unconfigured, http.StatusServiceUnavailable,
			"Service Unavailable: stats plugin GetSummary: plugin unavailable: no stats plugin is configured\n"},
		{"the plugin cannot measure now", func(t *testing.T) *Provider {
			return served(t, &plugin{err: sdk.Retryable("the runtime is down")})
		}, http.StatusServiceUnavailable, "Service Unavailable: stats plugin GetSummary: rpc error: code = Unavailable desc = the runtime is down\n"},
		{"the plugin fails", func(t *testing.T) *Provider {
			return served(t, &plugin{err: errors.New("boom")})
		}, http.StatusInternalServerError, "Internal Error: stats plugin GetSummary: rpc error: code = Unknown desc = boom\n"},
		{"the plugin sends no node", func(t *testing.T) *Provider {
			return served(t, &plugin{sample: &Sample{}})
		}, http.StatusInternalServerError, "Internal Error: stats plugin GetSummary: rpc error: code = Internal desc = GetSummary returned no node stats; the summary starts with the node\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, tt.provider(t).SummaryHandler(), http.MethodGet, "/stats/summary")
			if rec.Code != tt.code || rec.Body.String() != tt.body {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Body, tt.code, tt.body)
			}
		})
	}
}

func TestSummaryForEviction(t *testing.T) {
	p := &plugin{sample: fullSample()}
	provider := served(t, p)
	got, err := provider.Summary(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, fullSummary()) {
		t.Errorf("Summary differs from the conversion of the plugin's answer")
	}
	if req := p.lastRequest(); !req.GetFresh() || req.GetOnlyCpuAndMemory() {
		t.Errorf("the plugin was asked %v, want a fresh full summary", req)
	}
	sample, err := provider.Sample(t.Context(), false)
	if err != nil || sample.Node.GetNodeName() != "node-a" || len(sample.Pods) != 1 || p.lastRequest().GetFresh() {
		t.Errorf("Sample = %v, %v (asked %v)", sample, err, p.lastRequest())
	}

	_, err = unconfigured(t).Summary(t.Context(), true)
	if !errors.Is(err, pluginhost.ErrUnavailable) {
		t.Errorf("without a plugin: %v, want an error wrapping pluginhost.ErrUnavailable", err)
	}
}

// fakeStream replays messages as a GetSummary stream.
type fakeStream struct {
	statsv1.StatsService_GetSummaryClient
	msgs []*statsv1.GetSummaryResponse
}

func (s *fakeStream) Recv() (*statsv1.GetSummaryResponse, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

func TestReceiveChecksTheOrder(t *testing.T) {
	node := &statsv1.GetSummaryResponse{Item: &statsv1.GetSummaryResponse_Node{Node: &typesv1.NodeStats{NodeName: "n"}}}
	pod := &statsv1.GetSummaryResponse{Item: &statsv1.GetSummaryResponse_Pod{Pod: &typesv1.PodStats{}}}
	tests := []struct {
		name string
		msgs []*statsv1.GetSummaryResponse
		err  string
	}{
		{"node then pods", []*statsv1.GetSummaryResponse{node, pod, pod}, ""},
		{"nothing", nil, "the plugin sent no node stats"},
		{"a pod first", []*statsv1.GetSummaryResponse{pod, node}, "the plugin sent pod stats before the node's"},
		{"two nodes", []*statsv1.GetSummaryResponse{node, pod, node}, "the plugin sent node stats after the first message"},
		{"an empty message", []*statsv1.GetSummaryResponse{node, {}}, "the plugin sent a message with neither node nor pod stats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := receive(&fakeStream{msgs: tt.msgs})
			if tt.err == "" {
				if err != nil || len(s.Pods) != 2 {
					t.Errorf("receive = %v, %v", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("receive: %v, want %q", err, tt.err)
			}
		})
	}
}

// TestSummaryWhilePluginDown configures a stats plugin that cannot start:
// its slot exists but nothing serves it.
func TestSummaryWhilePluginDown(t *testing.T) {
	host, err := pluginhost.New(pluginhost.Options{Dir: t.TempDir(), SocketDir: filepath.Join(t.TempDir(), "sockets")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := host.Close(context.Background()); err != nil {
			t.Errorf("close the plugin host: %v", err)
		}
	})
	if err := host.Reconcile(t.Context(), []pluginhost.Spec{{Kind: "stats", Name: "default"}}); err == nil {
		t.Fatal("a plugin without a binary started")
	}
	if host.Plugin("stats") == nil {
		t.Fatal("the configured plugin has no slot")
	}
	provider := New(HostPlugin(host), hclog.NewNullLogger())
	if _, err := provider.Summary(t.Context(), true); !errors.Is(err, pluginhost.ErrUnavailable) {
		t.Errorf("Summary: %v, want an error wrapping pluginhost.ErrUnavailable", err)
	}
	if rec := get(t, provider.SummaryHandler(), http.MethodGet, "/stats/summary"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/stats/summary: %d %q, want 503", rec.Code, rec.Body)
	}
}
