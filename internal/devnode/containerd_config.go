package devnode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// containerdConfig is what differs between the containerd instances of two
// nodes. Every path containerd 1.6 would otherwise take from a global
// default (/var/lib/containerd, /run/containerd, /opt/containerd,
// /run/containerd/runc, /etc/cni/net.d, /run/netns) is set to one of the
// node's own. What stays global: shim sockets under /run/containerd/s,
// named by a hash of this instance's socket path so they never collide, and
// libcni's result cache in /var/lib/cni, keyed by the network's name, which
// is the node's own.
type containerdConfig struct {
	Root, State, Socket, Opt string
	RuncRoot                 string
	CNIBinDir, CNIConfDir    string
	SandboxImage             string
	// RegistryConfigPath is the CRI's registry config_path (a hosts.toml
	// per registry host); "": none.
	RegistryConfigPath string
}

// The configuration format of containerd 1.6 (version 2).
var containerdConfigTemplate = template.Must(template.New("config.toml").Funcs(template.FuncMap{
	"q": strconv.Quote, // TOML basic strings read Go's quoting of plain paths
}).Parse(`version = 2
root = {{q .Root}}
state = {{q .State}}
# Snapshotters that cannot work here, and tracing, which would export.
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = {{q .Socket}}

[ttrpc]
  address = {{q (print .Socket ".ttrpc")}}

# No debug or metrics listener: they would be sockets and ports to share.
[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {{q .Opt}}

# The legacy runtime runs nothing here, but the tasks service needs it
# loaded; its runc root would default to /run/containerd/runc.
[plugins."io.containerd.runtime.v1.linux"]
  runtime_root = {{q .RuncRoot}}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {{q .SandboxImage}}
  # Without it runc fails every sandbox here: it may not lower its own
  # oom_score_adj to -998.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = {{q .RuncRoot}}
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {{q .CNIBinDir}}
    conf_dir = {{q .CNIConfDir}}
    max_conf_num = 1
{{- if .RegistryConfigPath}}

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = {{q .RegistryConfigPath}}
{{- end}}
`))

func (c containerdConfig) render() ([]byte, error) {
	var buf bytes.Buffer
	if err := containerdConfigTemplate.Execute(&buf, c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeRegistryHosts writes containerd's hosts.toml for each registry host
// in cas (host → CA file) under dir, and returns dir; with no registries it
// writes nothing and returns "".
func writeRegistryHosts(dir string, cas map[string]string) (string, error) {
	if len(cas) == 0 {
		return "", nil
	}
	hosts := make([]string, 0, len(cas))
	for host := range cas {
		hosts = append(hosts, host)
	}
	slices.Sort(hosts)
	for _, host := range hosts {
		ca := cas[host]
		if host == "" || strings.ContainsAny(host, "/\\") || !filepath.IsAbs(ca) {
			return "", fmt.Errorf("registry %q with CA %q: want a host[:port] and an absolute CA file", host, ca)
		}
		server := strconv.Quote("https://" + host)
		toml := fmt.Sprintf("server = %s\n\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = %s\n", server, server, strconv.Quote(ca))
		if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(toml), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
