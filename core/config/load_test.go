package config

import (
	"reflect"
	"testing"
	"time"
)

// TestPrecedence: each source overrides the ones before it, for a top-level
// key (max_pods) and a nested one (plugin_host.call_timeout).
func TestPrecedence(t *testing.T) {
	const (
		mainFile = "max_pods = 10\nplugin_host {\n  call_timeout = \"3s\"\n  start_timeout = \"7s\"\n}\n"
		dropIn   = "max_pods = 20\nplugin_host {\n  call_timeout = \"4s\"\n}\n"
	)
	tests := []struct {
		name           string
		src            sources
		wantMaxPods    int
		wantMaxPodsPos string
		wantCall       time.Duration
		wantCallPos    string
	}{
		{
			name:        "defaults",
			src:         sources{},
			wantMaxPods: 110, wantCall: 2 * time.Second,
		},
		{
			name:        "main file",
			src:         sources{main: mainFile},
			wantMaxPods: 10, wantMaxPodsPos: "{main}:1",
			wantCall: 3 * time.Second, wantCallPos: "{main}:3",
		},
		{
			name:        "drop-in over main file",
			src:         sources{main: mainFile, dropIns: map[string]string{"10-a.hcl": dropIn}},
			wantMaxPods: 20, wantMaxPodsPos: "{dir}/10-a.hcl:1",
			wantCall: 4 * time.Second, wantCallPos: "{dir}/10-a.hcl:3",
		},
		{
			name: "environment over drop-in",
			src: sources{main: mainFile, dropIns: map[string]string{"10-a.hcl": dropIn},
				env: []string{"MICROLET_MAX_PODS=30", "MICROLET_PLUGIN_HOST__CALL_TIMEOUT=5s", "PATH=/bin"}},
			wantMaxPods: 30, wantMaxPodsPos: "MICROLET_MAX_PODS",
			wantCall: 5 * time.Second, wantCallPos: "MICROLET_PLUGIN_HOST__CALL_TIMEOUT",
		},
		{
			name: "flag over environment",
			src: sources{main: mainFile, dropIns: map[string]string{"10-a.hcl": dropIn},
				env: []string{"MICROLET_MAX_PODS=30", "MICROLET_PLUGIN_HOST__CALL_TIMEOUT=5s"}, args: []string{"--max-pods=40"}},
			wantMaxPods: 40, wantMaxPodsPos: "--max-pods",
			wantCall: 5 * time.Second, wantCallPos: "MICROLET_PLUGIN_HOST__CALL_TIMEOUT",
		},
		{
			name:        "flags the user did not set do not override",
			src:         sources{env: []string{"MICROLET_MAX_PODS=30"}, args: []string{"--log-level=debug"}},
			wantMaxPods: 30, wantMaxPodsPos: "MICROLET_MAX_PODS",
			wantCall: 2 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, p := mustLoad(t, tt.src)
			if cfg.MaxPods != tt.wantMaxPods {
				t.Errorf("max_pods = %d, want %d", cfg.MaxPods, tt.wantMaxPods)
			}
			if cfg.PluginHost.CallTimeout != tt.wantCall {
				t.Errorf("plugin_host.call_timeout = %s, want %s", cfg.PluginHost.CallTimeout, tt.wantCall)
			}
			checkPosition(t, cfg, p, "max_pods", tt.wantMaxPodsPos)
			checkPosition(t, cfg, p, "plugin_host.call_timeout", tt.wantCallPos)
			// A block merges key by key: start_timeout survives the drop-in.
			if tt.src.main != "" && cfg.PluginHost.StartTimeout != 7*time.Second {
				t.Errorf("plugin_host.start_timeout = %s, want 7s from the main file", cfg.PluginHost.StartTimeout)
			}
		})
	}
}

func checkPosition(t *testing.T, cfg *Config, p paths, key, want string) {
	t.Helper()
	pos, ok := cfg.Position(key)
	if want == "" {
		if ok {
			t.Errorf("Position(%q) = %v, want none", key, pos)
		}
		return
	}
	if want = p.expand(want); !ok || pos.String() != want {
		t.Errorf("Position(%q) = %v (%v), want %s", key, pos, ok, want)
	}
}

// TestDropInsMergeInNameOrder: later names win, whatever order the files
// were written in; hidden files, other extensions and directories are skipped.
func TestDropInsMergeInNameOrder(t *testing.T) {
	cfg, p := mustLoad(t, sources{
		main: `log_level = "error"`,
		dropIns: map[string]string{
			"20-b.hcl":    "max_pods = 2\nsync_frequency = \"2m\"\n",
			"10-a.hcl":    "max_pods = 1\nlog_level = \"warn\"\ncgroup_root = \"/a\"\n",
			"30-c.hcl":    "sync_frequency = \"3m\"\n",
			".99-hid.hcl": "max_pods = 99\n",
			"40-d.conf":   "max_pods = 98\n",
		},
	})
	want := struct {
		maxPods  int
		logLevel string
		sync     time.Duration
		root     string
	}{2, "warn", 3 * time.Minute, "/a"}
	got := want
	got.maxPods, got.logLevel, got.sync, got.root = cfg.MaxPods, cfg.LogLevel, cfg.SyncFrequency, cfg.CgroupRoot
	if got != want {
		t.Errorf("merged = %+v, want %+v", got, want)
	}
	checkPosition(t, cfg, p, "max_pods", "{dir}/20-b.hcl:1")
	checkPosition(t, cfg, p, "sync_frequency", "{dir}/30-c.hcl:1")
	checkPosition(t, cfg, p, "log_level", "{dir}/10-a.hcl:2")
}

// TestPluginConfigBodiesSurviveAndMerge: a config body reaches the plugin
// verbatim (dotted and mixed-case keys, lists of blocks, labelled blocks),
// and a drop-in overrides single keys of it.
func TestPluginConfigBodiesSurviveAndMerge(t *testing.T) {
	cfg, p := mustLoad(t, sources{
		main: `
plugin "eviction" "kubelet" {
  args = ["-v"]
  env = { HOME = "/root", LANG = "C" }
  config {
    hard {
      "memory.available" = "100Mi"
      "nodefs.available" = "10%"
    }
    gracePeriod = "30s"
    rule { signal = "a" }
    rule { signal = "b" }
    threshold "imagefs.available" { value = "15%" }
  }
}
plugin "devices" "gpu" {}
plugin "devices" "fpga" {}
`,
		dropIns: map[string]string{"10-x.hcl": `
plugin "eviction" "kubelet" {
  env = { LANG = "C.UTF-8" }
  config {
    hard { "memory.available" = "200Mi" }
  }
}
`},
		env: []string{"MICROLET_PLUGIN__EVICTION__KUBELET__BINARY=custom-eviction"},
	})

	if len(cfg.Plugins) != 3 {
		t.Fatalf("got %d plugins, want 3: %+v", len(cfg.Plugins), cfg.Plugins)
	}
	var ids []string
	for _, pl := range cfg.Plugins {
		ids = append(ids, pl.Kind+"/"+pl.Name)
	}
	if want := []string{"devices/fpga", "devices/gpu", "eviction/kubelet"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("plugins = %v, want %v (sorted by kind, then name)", ids, want)
	}

	ev := cfg.Plugins[2]
	wantBody := map[string]any{
		"hard": map[string]any{
			"memory.available": "200Mi",
			"nodefs.available": "10%",
		},
		"gracePeriod": "30s",
		"rule": []any{
			map[string]any{"signal": "a"},
			map[string]any{"signal": "b"},
		},
		"threshold": map[string]any{
			"imagefs.available": map[string]any{"value": "15%"},
		},
	}
	if !reflect.DeepEqual(ev.Config, wantBody) {
		t.Errorf("eviction config body =\n%#v\nwant\n%#v", ev.Config, wantBody)
	}
	if want := map[string]string{"HOME": "/root", "LANG": "C.UTF-8"}; !reflect.DeepEqual(ev.Env, want) {
		t.Errorf("env = %v, want %v", ev.Env, want)
	}
	if want := []string{"-v"}; !reflect.DeepEqual(ev.Args, want) {
		t.Errorf("args = %v, want %v", ev.Args, want)
	}
	if ev.Binary != "custom-eviction" {
		t.Errorf("binary = %q, want the environment's custom-eviction", ev.Binary)
	}
	if want := p.expand("{main}:2"); ev.Position.String() != want {
		t.Errorf("plugin position = %v, want its first declaration %s", ev.Position, want)
	}
	checkPosition(t, cfg, p, "plugin.eviction.kubelet.config.hard.memory.available", "{dir}/10-x.hcl:5")
	checkPosition(t, cfg, p, "plugin.eviction.kubelet.config.hard.nodefs.available", "{main}:8")
	checkPosition(t, cfg, p, "plugin.eviction.kubelet.binary", "MICROLET_PLUGIN__EVICTION__KUBELET__BINARY")
}

// TestListsAndMapsFromTextSources: the environment and flags give lists
// comma-separated and header maps as the kubelet's name:value pairs; maps
// merge per name over the files'.
func TestListsAndMapsFromTextSources(t *testing.T) {
	cfg, _ := mustLoad(t, sources{
		main: `
cluster_dns = ["10.0.0.1"]
static_pod_url = "https://example.test/pods"
static_pod_url_header = { "X-A" = ["1"], "X-B" = ["old"] }
`,
		env: []string{"MICROLET_CLUSTER_DNS=10.96.0.10, fd00::a", "MICROLET_LOG_JSON=true"},
		args: []string{
			"--manifest-url-header", "X-B:2,X-C:3", "--manifest-url-header=X-B:4",
			"--log-json=false", "--node-ip", "10.1.0.5,fd00::5", "--runtime-request-timeout=90s",
		},
	})
	if want := []string{"10.96.0.10", "fd00::a"}; !reflect.DeepEqual(cfg.ClusterDNS, want) {
		t.Errorf("cluster_dns = %v, want %v", cfg.ClusterDNS, want)
	}
	wantHeaders := map[string][]string{"X-A": {"1"}, "X-B": {"2", "4"}, "X-C": {"3"}}
	if !reflect.DeepEqual(cfg.StaticPodURLHeader, wantHeaders) {
		t.Errorf("static_pod_url_header = %v, want %v", cfg.StaticPodURLHeader, wantHeaders)
	}
	if cfg.LogJSON {
		t.Error("log_json = true, want false from --log-json=false over the environment")
	}
	if cfg.NodeIP != "10.1.0.5,fd00::5" || cfg.RuntimeRequestTimeout != 90*time.Second {
		t.Errorf("node_ip = %q, runtime_request_timeout = %s", cfg.NodeIP, cfg.RuntimeRequestTimeout)
	}
}

func TestBoolFlagWithoutValue(t *testing.T) {
	cfg, _ := mustLoad(t, sources{main: "log_json = false", args: []string{"--log-json"}})
	if !cfg.LogJSON {
		t.Error("--log-json alone did not set log_json")
	}
}

func TestPositions(t *testing.T) {
	cfg, p := mustLoad(t, sources{
		main: `log_level = "debug"

plugin_host {
  call_timeout = "3s"
}

plugin "devices" "gpu" {
  args = ["a",
          "b"]
  config {
    "vendor.example/gpu" = { count = 2 }
  }
}
`,
		env:  []string{"MICROLET_MAX_PODS=5"},
		args: []string{"--root-dir=/srv"},
	})
	tests := []struct{ key, want string }{
		{"log_level", "{main}:1"},
		{"plugin_host", "{main}:3"},
		{"plugin_host.call_timeout", "{main}:4"},
		{"plugin.devices.gpu", "{main}:7"},
		{"plugin.devices.gpu.args", "{main}:8"},
		{"plugin.devices.gpu.config.vendor.example/gpu", "{main}:11"},
		{"plugin.devices.gpu.config.vendor.example/gpu.count", "{main}:11"},
		{"max_pods", "MICROLET_MAX_PODS"},
		{"root_dir", "--root-dir"},
		{"sync_frequency", ""},      // default
		{"no_such_key", ""},         // unknown
		{"plugin_host.nothing", ""}, // unknown below a known block
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) { checkPosition(t, cfg, p, tt.key, tt.want) })
	}
}
