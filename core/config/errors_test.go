package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestErrors: every problem is reported, naming where it was set (file and
// line, variable or flag), the key, and what was expected.
func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		src  sources
		want []string
	}{
		{
			// HCL v1's parser notices the missing value two lines later,
			// at the end of the file; the error names the "=" (syntaxHint).
			name: "syntax error names file, line and column",
			src:  sources{main: "log_level = \"info\"\nplugin_host {\n  call_timeout = \n}\n"},
			want: []string{`{main}:3:16: syntax error: expected a value after "=" (noticed at 5:1: object expected closing RBRACE got: EOF)`},
		},
		{
			name: "syntax error in a drop-in; other files still load",
			src: sources{
				main:    `max_pods = "many"`,
				dropIns: map[string]string{"10-x.hcl": "max_pods = 5\nlog_level = = 3\n"},
			},
			want: []string{
				`{main}:1: max_pods: expected a whole number, got "many"`,
				`{dir}/10-x.hcl:2:13: syntax error: Unknown token: 2:13 ASSIGN =`,
			},
		},
		{
			name: "type error names file, line, key and expectation",
			src:  sources{main: "plugin_host {\n  call_timeout = \"fast\"\n  health_failures = \"two\"\n}\nlog_json = \"yes\"\ncluster_dns = [\"10.0.0.1\", 53]\n"},
			want: []string{
				`{main}:2: plugin_host.call_timeout: expected a duration such as "2s", got "fast"`,
				`{main}:3: plugin_host.health_failures: expected a whole number, got "two"`,
				`{main}:5: log_json: expected true or false, got "yes"`,
				`{main}:6: cluster_dns: expected a list of strings, got 53 at index 1`,
			},
		},
		{
			name: "unknown keys, with suggestions",
			src:  sources{main: "log_level = \"info\"\nplugn_dir = \"/x\"\nplugin_host {\n  call_timout = \"1s\"\n}\nfrobnicate = true\n"},
			want: []string{
				`{main}:2: unknown key "plugn_dir" (did you mean "plugin_dir"?)`,
				`{main}:4: plugin_host: unknown key "call_timout" (did you mean "call_timeout"?)`,
				`{main}:6: unknown key "frobnicate"`,
			},
		},
		{
			name: "a block where a value belongs, and the reverse",
			src:  sources{main: "max_pods { n = 1 }\nplugin_host = \"fast\"\n"},
			want: []string{
				`{main}:1: max_pods: expected a whole number, got a block`,
				`{main}:2: plugin_host: expected a block, got "fast"`,
			},
		},
		{
			name: "a key set twice in one file",
			src:  sources{main: "log_level = \"info\"\nlog_level = \"debug\"\n"},
			want: []string{`{main}:2: log_level: set more than once in this file (first at line 1)`},
		},
		{
			name: "environment errors name the variable",
			src: sources{env: []string{
				"MICROLET_MAX_PODS=lots",
				"MICROLET_LOG_LEVLE=debug",
				"MICROLET_PLUGIN_HOST__CALL_TIMEOUT=soon",
				"MICROLET_PLUGIN__EVICTION__KUBELET__CONFIG__HARD=1",
				"MICROLET_PLUGIN_MAGIC_COOKIE=ignored",
				"MICROLET_CGROUP_ROOT=/x",
				"MICROLET_CGROUP_ROOT__SUB=/y",
			}},
			want: []string{
				`MICROLET_CGROUP_ROOT__SUB: cgroup_root.sub: cannot be set: MICROLET_CGROUP_ROOT sets cgroup_root to a value`,
				`MICROLET_LOG_LEVLE: unknown key "log_levle" (did you mean MICROLET_LOG_LEVEL?)`,
				`MICROLET_MAX_PODS: max_pods: expected a whole number, got "lots"`,
				`MICROLET_PLUGIN_HOST__CALL_TIMEOUT: plugin_host.call_timeout: expected a duration such as "2s", got "soon"`,
				`MICROLET_PLUGIN__EVICTION__KUBELET__CONFIG__HARD: plugin.eviction.kubelet.config: can only be set in a config file`,
			},
		},
		{
			name: "flag errors name the flag",
			src: sources{args: []string{
				"--max-pods=lots", "--sync-frequency=often", "--log-json=maybe", "--manifest-url-header=nocolon",
			}},
			want: []string{
				`--log-json: log_json: expected true or false, got "maybe"`,
				`--manifest-url-header: static_pod_url_header: expected comma-separated name:value pairs such as "a:x,b:y", got "nocolon"`,
				`--max-pods: max_pods: expected a whole number, got "lots"`,
				`--sync-frequency: sync_frequency: expected a duration such as "2s", got "often"`,
			},
		},
		{
			name: "every source's errors together, in precedence order",
			src: sources{
				main: `healthz_port = "x"`,
				env:  []string{"MICROLET_HEALTHZ_PORT=y"},
				args: []string{"--gomaxprocs=z"},
			},
			want: []string{
				`{main}:1: healthz_port: expected a whole number, got "x"`,
				`MICROLET_HEALTHZ_PORT: healthz_port: expected a whole number, got "y"`,
				`--gomaxprocs: gomaxprocs: expected a whole number, got "z"`,
			},
		},
		{
			name: "singleton plugin kinds refuse a second block",
			src: sources{
				main:    "plugin \"eviction\" \"a\" {}\nplugin \"devices\" \"x\" {}\nplugin \"devices\" \"y\" {}\n",
				dropIns: map[string]string{"10-b.hcl": "plugin \"eviction\" \"b\" {}\n"},
			},
			want: []string{
				`{dir}/10-b.hcl:1: plugin.eviction: at most one eviction plugin may be configured, found "a" ({main}:1), "b" ({dir}/10-b.hcl:1)`,
			},
		},
		{
			name: "malformed plugin blocks",
			src: sources{main: `plugin "evicton" "x" {}
plugin "devices" "Dev_1" {}
plugin "imagegc" { binary = "x" }
plugin "probes" "a" {}
plugin "probes" "a" {}
plugin "stats" "s" { bianry = "x" }
plugin = "none"
`},
			want: []string{
				`{main}:1: plugin.evicton: unknown plugin kind "evicton", expected one of cgroup, devices, eviction, imagegc, probes, stats (did you mean "eviction"?)`,
				`{main}:2: plugin.devices.Dev_1: plugin name "Dev_1": expected lowercase letters, digits and '-'`,
				`{main}:3: plugin.imagegc.binary: expected a block with two labels, plugin "<kind>" "<name>" { ... }`,
				`{main}:4: plugin.probes.a: plugin block declared more than once in this file`,
				`{main}:6: plugin.stats.s: unknown key "bianry" (did you mean "binary"?)`,
				`{main}:7: plugin: set more than once in this file (first at line 1)`,
			},
		},
		{
			name: "plugin block values",
			src: sources{main: `plugin "devices" "a" {
  binary = "../bin/evil"
  sha256 = "abc"
  env = { "MICROLET_PLUGIN_KIND" = "x", "A=B" = "y", "N" = 5 }
}
plugin "devices" "b" {
  env = { "MICROLET_PLUGIN_KIND" = "x", "A=B" = "y" }
  args = "-v"
}
`},
			want: []string{
				`{main}:4: plugin.devices.a.env: expected a map of strings, got 5 for "N"`,
				`{main}:8: plugin.devices.b.args: expected a list of strings, got "-v"`,
				`{main}:3: plugin.devices.a.sha256: expected 64 hexadecimal characters, got "abc"`,
				`{main}:2: plugin.devices.a.binary: expected a file name in plugin_dir, without '/', got "../bin/evil"`,
				`{main}:7: plugin.devices.b.env: expected environment variable names, got "A=B"`,
				`{main}:7: plugin.devices.b.env: MICROLET_PLUGIN_KIND is set by the plugin host for every plugin and cannot be overridden`,
			},
		},
		{
			name: "validation of values",
			src: sources{main: `log_level = "loud"
cgroup_driver = "systemdd"
runtime_request_timeout = "0s"
max_pods = -1
healthz_port = 70000
root_dir = "var/lib/microlet"
container_runtime_endpoint = "/run/containerd/containerd.sock"
node_name = "Bad_Name!"
node_ip = "10.0.0.1,10.0.0.2"
pod_cidr = "10.244.0.0"
cluster_dns = ["10.96.0.10", "dns"]
healthz_bind_address = "localhost"
static_pod_url = "ftp://example.test/pods"
static_pod_url_header = { "Bad Header" = ["v"] }
plugin_host {
  restart_backoff = "1m"
  health_failures = 0
}
eviction_max_pods_per_cycle = 0
`},
			want: []string{
				`{main}:1: log_level: expected one of trace, debug, info, warn, error, got "loud"`,
				`{main}:2: cgroup_driver: expected one of cgroupfs, systemd, got "systemdd"`,
				`{main}:3: runtime_request_timeout: expected a positive duration, got "0s"`,
				`{main}:4: max_pods: expected a whole number of at least 0, got -1`,
				`{main}:19: eviction_max_pods_per_cycle: expected a whole number of at least 1, got 0`,
				`{main}:17: plugin_host.health_failures: expected a whole number of at least 1, got 0`,
				`{main}:5: healthz_port: expected 0 (disabled) or a port from 1 to 65535, got 70000`,
				`{main}:16: plugin_host.restart_backoff: restart_backoff (1m0s) exceeds restart_backoff_max (30s)`,
				`{main}:6: root_dir: expected an absolute path, got "var/lib/microlet"`,
				`{main}:7: container_runtime_endpoint: expected a unix socket endpoint such as "unix:///run/containerd/containerd.sock", got "/run/containerd/containerd.sock"`,
				`{main}:8: node_name: expected a lowercase RFC 1123 subdomain (letters, digits, '-' and '.'), got "bad_name!"`,
				`{main}:9: node_ip: expected one IP address, or an IPv4 and an IPv6 one separated by a comma, got "10.0.0.1,10.0.0.2"`,
				`{main}:10: pod_cidr: expected an CIDR, got "10.244.0.0"`,
				`{main}:11: cluster_dns: expected IP addresses, got "dns" at index 1`,
				`{main}:12: healthz_bind_address: expected an IP address, got "localhost"`,
				`{main}:13: static_pod_url: expected an http or https URL, got "ftp://example.test/pods"`,
				`{main}:14: static_pod_url_header: expected HTTP header names, got "Bad Header"`,
			},
		},
		{
			name: "validation of image pulls",
			src: sources{main: `max_parallel_image_pulls = 5
image_credential_provider_config = "etc/providers.yaml"
`},
			want: []string{
				`{main}:1: max_parallel_image_pulls: cannot be larger than 1 unless serialize_image_pulls is false, got 5`,
				`{main}:2: image_credential_provider_config: needs image_credential_provider_bin_dir: the plugins it names are found there`,
				`{main}:2: image_credential_provider_config: expected an absolute path, got "etc/providers.yaml"`,
			},
		},
		{
			name: "validation of container log rotation",
			src: sources{main: `container_log_max_size = "ten megs"
container_log_max_files = 1
container_log_monitor_interval = "2s"
container_log_max_workers = 0
`},
			want: []string{
				`{main}:1: container_log_max_size: expected a quantity such as "10Mi": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
				`{main}:2: container_log_max_files: expected a whole number of at least 2, got 1`,
				`{main}:4: container_log_max_workers: expected a whole number of at least 1, got 0`,
				`{main}:3: container_log_monitor_interval: expected at least 3s, got 2s`,
			},
		},
		{
			name: "validation of graceful node shutdown",
			src: sources{main: `shutdown_grace_period = "1500ms"
shutdown_grace_period_critical_pods = "10s"
shutdown_grace_period_by_pod_priority = { "high" = "10s", "0" = "-1s" }
`},
			want: []string{
				`{main}:1: shutdown_grace_period: expected zero or whole seconds of at least 1s, got 1.5s`,
				`{main}:2: shutdown_grace_period_critical_pods: must be at most shutdown_grace_period (1.5s), got 10s`,
				`{main}:3: shutdown_grace_period_by_pod_priority: priority 0: expected a duration of whole seconds such as "30s", got "-1s"`,
				`{main}:3: shutdown_grace_period_by_pod_priority: cannot be set with shutdown_grace_period or shutdown_grace_period_critical_pods`,
			},
		},
		{
			// The agent cannot run it yet: config validate must say so too.
			name: "the systemd cgroup driver",
			src:  sources{main: "cgroup_driver = \"systemd\"\n"},
			want: []string{
				`{main}:1: cgroup_driver: "systemd" is not supported yet: microlet manages cgroups with the cgroupfs driver only; set cgroup_driver = "cgroupfs" and configure the runtime likewise (containerd: SystemdCgroup = false)`,
			},
		},
		{
			// The agent's sysctl allowlist refuses it at start: so does validate.
			name: "an unsafe sysctl that is not namespaced",
			src:  sources{main: "allowed_unsafe_sysctls = [\"kernel.msg*\", \"vm.swappiness\"]\n"},
			want: []string{
				`{main}:1: allowed_unsafe_sysctls: the sysctls "vm.swappiness" are not known to be namespaced`,
			},
		},
		{
			name: "validation of the node API",
			src: sources{main: `port = 10248
read_only_port = 70000
address = "any"
tls_cert_file = "/etc/microlet/tls.crt"
tls_min_version = "TLS1.2"
tls_cipher_suites = ["TLS_AES_128_GCM_SHA256", "RC4"]
node_log_dir = "log"
kubeconfig = "kubeconfig"
authentication {
  x509 { client_ca_file = "/etc/microlet/ca.pem" }
  webhook { cache_ttl = "0s" }
}
authorization { mode = "RBAC" }
`},
			want: []string{
				`{main}:11: authentication.webhook.cache_ttl: expected a positive duration, got "0s"`,
				`{main}:2: read_only_port: expected 0 (disabled) or a port from 1 to 65535, got 70000`,
				`{main}:1: port: port 10248 is also healthz_port; each listener needs its own port`,
				`{main}:4: tls_cert_file: tls_cert_file and tls_private_key_file go together: set both, or neither for a self-signed pair in cert_dir`,
				`{main}:5: tls_min_version: expected one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13, got "TLS1.2"`,
				`{main}:6: tls_cipher_suites: expected IANA cipher suite names such as "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", got "RC4" at index 1`,
				`{main}:13: authorization.mode: expected one of AlwaysAllow, Webhook, got "RBAC"`,
				`{main}:7: node_log_dir: expected an absolute path, got "log"`,
				`{main}:8: kubeconfig: expected an absolute path, got "kubeconfig"`,
				`{main}:3: address: expected an IP address, got "any"`,
			},
		},
		{
			name: "webhook authorization needs the API server once anyone can authenticate",
			src: sources{main: `authentication {
  anonymous { enabled = true }
}
`},
			want: []string{
				`kubeconfig: authorization mode Webhook asks the API server, and no kubeconfig is set: set kubeconfig, or authorization.mode = "AlwaysAllow"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, p := loadErrors(t, tt.src)
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = p.expand(w)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", lines(got), lines(want))
			}
		})
	}
}

func TestUnreadableSources(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.hcl")
	missingDir := filepath.Join(dir, "conf.d")
	_, err := Load(LoadOptions{MainFile: missing, DropInDir: missingDir})
	want := missing + ": cannot read config file: no such file or directory\n" +
		missingDir + ": cannot read config directory: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want\n%s", err, want)
	}
}

func lines(ls []string) string {
	out := ""
	for _, l := range ls {
		out += "  " + l + "\n"
	}
	return out
}
