package config

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func TestRedacted(t *testing.T) {
	cfg, _ := mustLoad(t, sources{main: `
static_pod_url = "https://user:hunter2@example.test/pods"
static_pod_url_header = { "Authorization" = ["Bearer abc"], "X-Trace" = ["1"] }
authorization { mode = "AlwaysAllow" }
plugin "eviction" "kubelet" {
  env = { API_KEY = "k", LANG = "C" }
  config {
    api_token = "t"
    nested { Password = "p", keep = "v" }
    rules = [{ client_secret = "s", name = "r" }]
    plain = "v"
  }
}
`})
	got := cfg.Redacted()

	checks := []struct {
		path []string
		want any
	}{
		{[]string{"static_pod_url"}, "https://user:xxxxx@example.test/pods"},
		{[]string{"static_pod_url_header", "Authorization"}, redacted},
		{[]string{"static_pod_url_header", "X-Trace"}, []any{"1"}},
		{[]string{"plugin", "eviction", "kubelet", "env"}, map[string]any{"API_KEY": redacted, "LANG": redacted}},
		{[]string{"plugin", "eviction", "kubelet", "config", "api_token"}, redacted},
		{[]string{"plugin", "eviction", "kubelet", "config", "nested"}, map[string]any{"Password": redacted, "keep": "v"}},
		{[]string{"plugin", "eviction", "kubelet", "config", "rules"}, []any{map[string]any{"client_secret": redacted, "name": "r"}}},
		{[]string{"plugin", "eviction", "kubelet", "config", "plain"}, "v"},
		{[]string{"plugin", "eviction", "kubelet", "binary"}, "microlet-eviction-kubelet"},
		{[]string{"plugin_host", "call_timeout"}, "2s"},
		{[]string{"max_pods"}, int64(110)},
		{[]string{"authorization", "mode"}, "AlwaysAllow"},
		{[]string{"authentication", "webhook", "cache_ttl"}, "2m0s"},
	}
	for _, c := range checks {
		var v any = got
		for _, k := range c.path {
			v = v.(map[string]any)[k]
		}
		if !reflect.DeepEqual(v, c.want) {
			t.Errorf("Redacted()%v = %#v, want %#v", c.path, v, c.want)
		}
	}

	// Redacting must not touch the Config itself.
	ev := cfg.Plugins[0]
	if ev.Env["API_KEY"] != "k" || ev.Config["api_token"] != "t" || cfg.StaticPodURLHeader["Authorization"][0] != "Bearer abc" {
		t.Errorf("Redacted changed the Config: env %v, config %v", ev.Env, ev.Config)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("Redacted() does not marshal as JSON: %v", err)
	}
}

func TestRedactedArgs(t *testing.T) {
	tests := []struct {
		name       string
		args, want []string
	}{
		{"inline values", []string{"microlet", "--manifest-url=https://u:pw@pods.test/", "--manifest-url-header=Authorization:Bearer t", "--max-pods=5"},
			[]string{"microlet", "--manifest-url=" + redacted, "--manifest-url-header=" + redacted, "--max-pods=5"}},
		{"separate values", []string{"microlet", "--manifest-url", "https://u:pw@pods.test/", "--manifest-url-header", "X-Token:t", "--port", "0"},
			[]string{"microlet", "--manifest-url", redacted, "--manifest-url-header", redacted, "--port", "0"}},
		{"repeated", []string{"microlet", "--manifest-url-header", "a:1", "--manifest-url-header=b:2"},
			[]string{"microlet", "--manifest-url-header", redacted, "--manifest-url-header=" + redacted}},
		{"flag last without value", []string{"microlet", "--manifest-url"}, []string{"microlet", "--manifest-url"}},
		{"after --", []string{"microlet", "--", "--manifest-url=x"}, []string{"microlet", "--", "--manifest-url=x"}},
		{"other flags and positional arguments", []string{"microlet", "--config", "/etc/microlet.hcl", "--manifest-url-headers=x", "file.hcl"},
			[]string{"microlet", "--config", "/etc/microlet.hcl", "--manifest-url-headers=x", "file.hcl"}},
		{"program name only", []string{"microlet"}, []string{"microlet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.args)
			if got := RedactedArgs(tt.args); !slices.Equal(got, tt.want) {
				t.Errorf("RedactedArgs(%q) = %q, want %q", tt.args, got, tt.want)
			}
			if !slices.Equal(tt.args, in) {
				t.Errorf("RedactedArgs changed its argument to %q", tt.args)
			}
		})
	}
}
