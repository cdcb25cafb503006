// Command run brings up a microlet node on this machine: a private
// containerd with its own CNI bridge and local images (internal/devnode),
// every plugin, and the core running the pods in examples/manifests. It
// says where to look and, on Ctrl-C, stops everything and removes what it
// made. `make run` builds the binaries and runs it (as root).
//
//	go run ./hack/run [-bin _output/bin] [-manifests examples/manifests]
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"text/template"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/devnode"
)

// cgroupRoot keeps the node's pods apart from any other agent's cgroups.
const cgroupRoot = "/microlet-run"

func main() {
	bin := flag.String("bin", "_output/bin", "directory of the microlet and plugin binaries (make build)")
	manifests := flag.String("manifests", "examples/manifests", "static pod manifests to run")
	port := flag.Int("healthz-port", 10248, "port of /healthz on 127.0.0.1")
	readOnlyPort := flag.Int("read-only-port", 10255, "port of the node API's read-only endpoints (/pods, /metrics, /stats/summary) on 127.0.0.1")
	flag.Parse()
	log := hclog.New(&hclog.LoggerOptions{Name: "run", Level: hclog.Info})
	if err := run(*bin, *manifests, *port, *readOnlyPort, log); err != nil {
		log.Error("failed", "error", err)
		os.Exit(1)
	}
}

func run(bin, manifests string, port, readOnlyPort int, log hclog.Logger) error {
	bin, _ = filepath.Abs(bin)
	manifests, _ = filepath.Abs(manifests)
	if _, err := os.Stat(filepath.Join(bin, "microlet")); err != nil {
		return fmt.Errorf("no microlet binary in %s: run `make build` first", bin)
	}
	for _, p := range []struct {
		port int
		flag string
	}{{port, "-healthz-port"}, {readOnlyPort, "-read-only-port"}} {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			return fmt.Errorf("port %d is taken (another microlet or kubelet?); pick one with %s: %w", p.port, p.flag, err)
		}
		ln.Close()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "microlet-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	node, err := devnode.Start(ctx, devnode.Options{Dir: filepath.Join(dir, "containerd"), Logger: log.Named("devnode")})
	if err != nil {
		return err
	}
	defer func() {
		// Close stops and removes every pod, then containerd; the pod
		// cgroups go after them.
		if err := node.Close(); err != nil {
			log.Error("removing the private containerd", "error", err)
		}
		if err := devnode.RemoveCgroup(cgroupRoot); err != nil {
			log.Error("removing the cgroups", "error", err)
		}
	}()
	if err := devnode.CreateCgroup(cgroupRoot); err != nil {
		return err
	}

	cfg := filepath.Join(dir, "microlet.hcl")
	if err := writeConfig(cfg, configValues{
		RootDir: filepath.Join(dir, "root"), PodLogsDir: filepath.Join(dir, "logs"), PluginDir: bin,
		Endpoint: node.Endpoint, CNIConfDir: node.CNIConfDir, Manifests: manifests,
		CgroupRoot: cgroupRoot, HealthzPort: port, ReadOnlyPort: readOnlyPort,
	}); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "microlet.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	core := exec.Command(filepath.Join(bin, "microlet"), "--config", cfg)
	core.Stdout, core.Stderr = logFile, logFile
	if err := core.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- core.Wait() }()

	base, readOnly := fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", readOnlyPort)
	fmt.Printf(`
microlet is up (pid %d) on a private containerd; its pods come from %s.

  health:    curl -s '%s/healthz?verbose'
  pods:      curl -s %s/pods        (also /stats/summary, /metrics)
  push a pod curl -s --unix-socket %s -X POST --data-binary @pod.yaml -H 'Content-Type: application/yaml' http://localhost/pods
  runtime:   ctr --address %s -n k8s.io containers ls
  log:       tail -f %s
  config:    %s (edit it: plugin blocks hot-swap on save)
  images:    %s, %s (local only; nothing can be pulled)

Edit or add files in the manifest dir and watch the pods follow. Ctrl-C stops everything.
`, core.Process.Pid, manifests, base, readOnly, filepath.Join(dir, "root", "pods.sock"), node.Socket, logPath, cfg, node.TestImage, node.PauseImage)

	select {
	case <-ctx.Done():
		log.Info("stopping")
		_ = core.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = core.Process.Kill()
			<-exited
		}
		return nil
	case err := <-exited:
		return fmt.Errorf("microlet exited (%v); its log: %s", err, logPath)
	}
}

type configValues struct {
	RootDir, PodLogsDir, PluginDir, Endpoint, CNIConfDir, Manifests, CgroupRoot string
	HealthzPort, ReadOnlyPort                                                   int
}

// configTemplate is examples/microlet.hcl's defaults bent to the private
// node, with every plugin.
var configTemplate = template.Must(template.New("microlet.hcl").Parse(`# Written by hack/run for a private node.
root_dir = "{{.RootDir}}"
pod_logs_dir = "{{.PodLogsDir}}"
container_logs_dir = ""
plugin_dir = "{{.PluginDir}}"
container_runtime_endpoint = "{{.Endpoint}}"
cni_conf_dir = "{{.CNIConfDir}}"
static_pod_path = "{{.Manifests}}"
cgroup_root = "{{.CgroupRoot}}"
healthz_port = {{.HealthzPort}}
# The node API: its read-only port on loopback; no secure port (no client
# CA or API server to authenticate callers with).
address = "127.0.0.1"
port = 0
read_only_port = {{.ReadOnlyPort}}
file_check_frequency = "5s"

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

func writeConfig(path string, v configValues) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return configTemplate.Execute(f, v)
}
