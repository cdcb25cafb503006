// Package devrun runs a microlet node on this machine for the make
// targets (hack/run, hack/cluster, hack/conformance): a private containerd
// with its own CNI bridge and local images (internal/devnode), a cgroup
// root of its own, every plugin, and the core on a config written for it,
// its output in a log file. Close stops the core, every pod and containerd,
// and removes what it made. StartCluster joins such a node to a control
// plane of its own (internal/devcluster).
package devrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"text/template"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/devnode"
)

// coreStopTimeout is how long the core has to stop after SIGTERM.
const coreStopTimeout = 15 * time.Second

// Options say how the node runs.
type Options struct {
	// Bin holds the microlet and plugin binaries (make build).
	Bin string
	// Manifests is the static pod directory.
	Manifests string
	// CgroupRoot keeps the node's pods apart from any other agent's.
	CgroupRoot string
	// HealthzPort and ReadOnlyPort are the ports on 127.0.0.1 of /healthz
	// and of the node API's read-only endpoints.
	HealthzPort, ReadOnlyPort int
	// Port is the node API's secure port on 127.0.0.1; 0: none.
	Port int
	// Extra is more config (HCL) for the node, e.g. a cluster's keys.
	Extra  string
	Logger hclog.Logger
}

// Node is the running node.
type Node struct {
	// Dir holds everything of the node; Close removes it.
	Dir string
	// ConfigPath is the core's config; LogPath its output.
	ConfigPath, LogPath string
	// Dev is the private containerd.
	Dev *devnode.Node
	// PID is the core's.
	PID int

	opts   Options
	core   *exec.Cmd
	exited chan error
}

// Start checks the ports, starts containerd and the core, and returns at
// once. On error it leaves nothing behind.
func Start(ctx context.Context, opts Options) (_ *Node, err error) {
	if _, err := os.Stat(filepath.Join(opts.Bin, "microlet")); err != nil {
		return nil, fmt.Errorf("no microlet binary in %s: run `make build` first", opts.Bin)
	}
	for _, p := range []struct {
		port int
		flag string
	}{{opts.HealthzPort, "-healthz-port"}, {opts.ReadOnlyPort, "-read-only-port"}, {opts.Port, "-port"}} {
		if p.port == 0 {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			return nil, fmt.Errorf("port %d is taken (another microlet or kubelet?); pick one with %s: %w", p.port, p.flag, err)
		}
		ln.Close()
	}
	dir, err := os.MkdirTemp("", "microlet-run-")
	if err != nil {
		return nil, err
	}
	n := &Node{Dir: dir, ConfigPath: filepath.Join(dir, "microlet.hcl"), LogPath: filepath.Join(dir, "microlet.log"), opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Close())
		}
	}()
	if n.Dev, err = devnode.Start(ctx, devnode.Options{Dir: filepath.Join(dir, "containerd"), Logger: opts.Logger.Named("devnode")}); err != nil {
		return nil, err
	}
	if err := devnode.CreateCgroup(opts.CgroupRoot); err != nil {
		return nil, err
	}
	if err := n.writeConfig(); err != nil {
		return nil, err
	}
	logFile, err := os.Create(n.LogPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	n.core = exec.Command(filepath.Join(opts.Bin, "microlet"), "--config", n.ConfigPath)
	n.core.Stdout, n.core.Stderr = logFile, logFile
	if err := n.core.Start(); err != nil {
		return nil, err
	}
	n.PID = n.core.Process.Pid
	n.exited = make(chan error, 1)
	go func() { n.exited <- n.core.Wait() }()
	return n, nil
}

// Wait blocks until ctx ends (nil) or the core exits (an error naming
// its log).
func (n *Node) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-n.exited:
		n.exited <- err
		return fmt.Errorf("microlet exited (%v); its log: %s", err, n.LogPath)
	}
}

// Close stops the core (SIGTERM, SIGKILL after coreStopTimeout), then
// every pod and containerd, removes the pod cgroups, the volume mounts the
// core left and the node's files.
func (n *Node) Close() error {
	var errs []error
	if n.core != nil {
		_ = n.core.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-n.exited:
			n.exited <- err
		case <-time.After(coreStopTimeout):
			_ = n.core.Process.Kill()
			n.exited <- <-n.exited
		}
	}
	if n.Dev != nil {
		// Close stops and removes every pod, then containerd; the pod
		// cgroups go after them.
		errs = append(errs, n.Dev.Close(), devnode.RemoveCgroup(n.opts.CgroupRoot))
	}
	// The core leaves its pods' volume mounts behind, as the kubelet does.
	if err := devnode.UnmountUnder(n.Dir); err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, os.RemoveAll(n.Dir))
	return errors.Join(errs...)
}

// Stop is Close for a command's defer: it says so, and logs what failed.
func (n *Node) Stop() {
	n.opts.Logger.Info("stopping")
	if err := n.Close(); err != nil {
		n.opts.Logger.Error("removing the node", "error", err)
	}
}

// configTemplate is examples/microlet.hcl's defaults bent to the private
// node, with every plugin.
var configTemplate = template.Must(template.New("microlet.hcl").Parse(`# Written by internal/devrun for a private node.
root_dir = "{{.Dir}}/root"
pod_logs_dir = "{{.Dir}}/logs"
container_logs_dir = ""
plugin_dir = "{{.Opts.Bin}}"
container_runtime_endpoint = "{{.Dev.Endpoint}}"
cni_conf_dir = "{{.Dev.CNIConfDir}}"
static_pod_path = "{{.Opts.Manifests}}"
cgroup_root = "{{.Opts.CgroupRoot}}"
healthz_port = {{.Opts.HealthzPort}}
# The node API on loopback: the read-only port, and the secure port when
# there is an API server to authenticate callers with.
address = "127.0.0.1"
port = {{.Opts.Port}}
read_only_port = {{.Opts.ReadOnlyPort}}
file_check_frequency = "5s"
{{.Opts.Extra}}
plugin "cgroup" "default" {}
plugin "probes" "default" {}
plugin "stats" "default" {}
plugin "eviction" "kubelet" {}
plugin "imagegc" "lru" {}
# Host device nodes as extended resources, where the machine has them.
plugin "devices" "hostdev" {
  config {
    resources = [
      { name = "microlet.dev/fuse", paths = ["/dev/fuse"] },
      { name = "microlet.dev/tun", paths = ["/dev/net/tun"] },
    ]
  }
}
`))

func (n *Node) writeConfig() error {
	f, err := os.Create(n.ConfigPath)
	if err != nil {
		return err
	}
	defer f.Close()
	return configTemplate.Execute(f, struct {
		Dir  string
		Opts Options
		Dev  *devnode.Node
	}{n.Dir, n.opts, n.Dev})
}
