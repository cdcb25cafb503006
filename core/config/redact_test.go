package config

import (
	"encoding/json"
	"reflect"
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
