package healthz

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthz(t *testing.T) {
	h := NewHealthz()
	pluginErr := errors.New("plugin eviction/kubelet is failed")
	healthy := true
	h.Add("plugin-eviction-kubelet", func() error {
		if healthy {
			return nil
		}
		return pluginErr
	})
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	tests := []struct {
		name     string
		healthy  bool
		path     string
		wantCode int
		wantBody []string
	}{
		{"all pass", true, "/healthz", 200, []string{"ok"}},
		{"verbose lists every check", true, "/healthz?verbose", 200, []string{"[+]ping ok", "[+]plugin-eviction-kubelet ok", "healthz check passed"}},
		{"a failed check fails the whole", false, "/healthz", 500, []string{"[-]plugin-eviction-kubelet failed: plugin eviction/kubelet is failed", "healthz check failed: plugin-eviction-kubelet"}},
		{"excluded check is skipped", false, "/healthz?exclude=plugin-eviction-kubelet", 200, []string{"ok"}},
		{"one check", false, "/healthz/ping", 200, []string{"ok"}},
		{"one failing check", false, "/healthz/plugin-eviction-kubelet", 500, []string{"failed"}},
		{"unknown check", true, "/healthz/nope", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			healthy = tt.healthy
			code, body := get(tt.path)
			if code != tt.wantCode {
				t.Fatalf("code %d, want %d; body %q", code, tt.wantCode, body)
			}
			for _, want := range tt.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("body %q lacks %q", body, want)
				}
			}
		})
	}
}
