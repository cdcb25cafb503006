// Command run brings up a microlet node on this machine: a private
// containerd with its own CNI bridge and local images, every plugin, and
// the core running the pods in examples/manifests (internal/devrun). It
// says where to look and, on Ctrl-C, stops everything and removes what it
// made. `make run` builds the binaries and runs it (as root).
//
//	go run ./hack/run [-bin _output/bin] [-manifests examples/manifests]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/devrun"
)

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	node, err := devrun.Start(ctx, devrun.Options{Bin: bin, Manifests: manifests, CgroupRoot: "/microlet-run",
		HealthzPort: port, ReadOnlyPort: readOnlyPort, Logger: log})
	if err != nil {
		return err
	}
	defer node.Stop()

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
`, node.PID, manifests, base, readOnly, filepath.Join(node.Dir, "root", "pods.sock"), node.Dev.Socket, node.LogPath, node.ConfigPath, node.Dev.TestImage, node.Dev.PauseImage)
	return node.Wait(ctx)
}
