package httpget

import (
	"context"
	"net/http"
	"reflect"
	"testing"
)

func TestNewRequest(t *testing.T) {
	tests := []struct {
		name        string
		podIP       string // empty: 10.0.0.5
		action      Action
		wantURL     string
		wantHost    string
		wantHeaders http.Header
	}{
		{"defaults: http, the pod's IP, kube-<purpose> and */*", "",
			Action{Port: 8080, Path: "/healthz"}, "http://10.0.0.5:8080/healthz", "",
			http.Header{"User-Agent": {"kube-probe/1.34"}, "Accept": {"*/*"}}},
		{"scheme in any case, a host, a query", "",
			Action{Scheme: "HTTPS", Host: "example.test", Port: 443, Path: "/ready?full=1"}, "https://example.test:443/ready?full=1", "",
			http.Header{"User-Agent": {"kube-probe/1.34"}, "Accept": {"*/*"}}},
		{"an IPv6 pod address is bracketed", "fd00::5",
			Action{Port: 80, Path: "/"}, "http://[fd00::5]:80/", "",
			http.Header{"User-Agent": {"kube-probe/1.34"}, "Accept": {"*/*"}}},
		{"the action's own User-Agent and Accept win; headers repeat", "",
			Action{Port: 80, Headers: [][2]string{{"User-Agent", "mine"}, {"Accept", "text/plain"}, {"X-A", "1"}, {"X-A", "2"}}},
			"http://10.0.0.5:80", "",
			http.Header{"User-Agent": {"mine"}, "Accept": {"text/plain"}, "X-A": {"1", "2"}}},
		{"an empty Accept removes it", "",
			Action{Port: 80, Headers: [][2]string{{"Accept", ""}}}, "http://10.0.0.5:80", "",
			http.Header{"User-Agent": {"kube-probe/1.34"}}},
		{"the Host header names the virtual host", "",
			Action{Port: 80, Path: "/", Headers: [][2]string{{"Host", "vhost.test"}}}, "http://10.0.0.5:80/", "vhost.test",
			http.Header{"User-Agent": {"kube-probe/1.34"}, "Accept": {"*/*"}, "Host": {"vhost.test"}}},
		{"a path that does not parse is passed along", "",
			Action{Port: 80, Path: "%zz"}, "http://10.0.0.5:80/%25zz", "",
			http.Header{"User-Agent": {"kube-probe/1.34"}, "Accept": {"*/*"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podIP := tt.podIP
			if podIP == "" {
				podIP = "10.0.0.5"
			}
			req, err := NewRequest(context.Background(), tt.action, podIP, "probe")
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tt.wantURL {
				t.Errorf("URL = %s, want %s", got, tt.wantURL)
			}
			if req.Host != tt.wantHost {
				t.Errorf("Host = %q, want %q", req.Host, tt.wantHost)
			}
			if !reflect.DeepEqual(req.Header, tt.wantHeaders) {
				t.Errorf("headers = %v, want %v", req.Header, tt.wantHeaders)
			}
		})
	}
	if req, _ := NewRequest(context.Background(), Action{Port: 80}, "10.0.0.5", "lifecycle"); req.Header.Get("User-Agent") != "kube-lifecycle/1.34" {
		t.Errorf("a hook's User-Agent = %q, want kube-lifecycle/1.34", req.Header.Get("User-Agent"))
	}
}

func TestFollowSameHost(t *testing.T) {
	from, _ := http.NewRequest(http.MethodGet, "http://10.0.0.5:80/a", nil)
	same, _ := http.NewRequest(http.MethodGet, "http://10.0.0.5:81/b", nil)
	other, _ := http.NewRequest(http.MethodGet, "http://10.0.0.6/b", nil)
	if err := FollowSameHost(same, []*http.Request{from}); err != nil {
		t.Errorf("a redirect to the same host: %v, want followed", err)
	}
	if err := FollowSameHost(other, []*http.Request{from}); err != http.ErrUseLastResponse {
		t.Errorf("a redirect to another host: %v, want ErrUseLastResponse", err)
	}
	via := make([]*http.Request, maxRedirects)
	for i := range via {
		via[i] = from
	}
	if err := FollowSameHost(same, via); err == nil {
		t.Errorf("redirect %d was followed", maxRedirects+1)
	}
}
