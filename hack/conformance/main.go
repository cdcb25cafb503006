// Command conformance runs the upstream node conformance suite against
// microlet: a control plane on loopback (internal/devcluster) and one
// microlet node on a private containerd (internal/devrun) joined by TLS
// bootstrap, as hack/cluster makes them; the images the suite names,
// built from local parts and imported into the node's containerd
// (images.go); then e2e.test (hack/tools/conformance/build.sh) under
// ginkgo, focused on [NodeConformance]. It writes the suite's output and a
// JUnit report into -report-dir and exits non-zero when a spec failed.
// `make conformance` builds everything and runs it (as root).
//
//	go run ./hack/conformance [-bin _output/bin] [-procs 4] [-report-dir _output/conformance] [-- e2e.test flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/devrun"
)

// readyTimeout bounds the wait for the node's TLS bootstrap and Ready.
const readyTimeout = 3 * time.Minute

// The focus and skip of the node conformance run (issue 14): every
// [NodeConformance] spec but the serial, slow, disruptive, flaky and
// feature-gated ones.
const (
	defaultFocus = `\[NodeConformance\]`
	defaultSkip  = `\[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|Feature:`
)

func main() {
	bin := flag.String("bin", "_output/bin", "directory of the microlet and plugin binaries (make build)")
	focus := flag.String("focus", defaultFocus, "ginkgo focus: the specs to run")
	skip := flag.String("skip", defaultSkip, "ginkgo skip")
	procs := flag.Int("procs", 4, "parallel ginkgo processes (the specs mostly wait for pods)")
	reportDir := flag.String("report-dir", "_output/conformance", "where the JUnit report and the suite's output go")
	flag.Parse()
	log := hclog.New(&hclog.LoggerOptions{Name: "conformance", Level: hclog.Info})
	if err := run(*bin, *focus, *skip, *procs, *reportDir, flag.Args(), log); err != nil {
		log.Error("failed", "error", err)
		os.Exit(1)
	}
}

func run(bin, focus, skip string, procs int, reportDir string, extra []string, log hclog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kubeBin, err := devnode.KubeToolsDir()
	if err != nil {
		return err
	}
	for _, tool := range []string{"e2e.test", "ginkgo"} {
		if _, err := os.Stat(filepath.Join(kubeBin, tool)); err != nil {
			return fmt.Errorf("%w (hack/tools/conformance/build.sh builds it)", err)
		}
	}
	agnhostSrc, err := agnhostSource()
	if err != nil {
		return err
	}
	if err := installBashStatic(log); err != nil {
		return err
	}
	if err := checkImageParts(kubeBin, agnhostSrc); err != nil {
		return err
	}
	if reportDir, err = filepath.Abs(reportDir); err != nil {
		return err
	}
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		return err
	}

	opts := devrun.Options{CgroupRoot: "/microlet-conformance", Logger: log,
		HealthzPort: 10248, ReadOnlyPort: 10255, Port: 10250}
	if opts.Bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	// No static pods: the suite counts the node's pods.
	if opts.Manifests, err = os.MkdirTemp("", "conformance-manifests-"); err != nil {
		return err
	}
	defer os.RemoveAll(opts.Manifests)
	cl, err := devrun.StartCluster(ctx, kubeBin, opts)
	if err != nil {
		return err
	}
	defer cl.Stop()
	node := cl.Node
	log.Info("importing the suite's images")
	for _, img := range suiteImages(kubeBin, agnhostSrc) {
		if err := node.Dev.ImportImage(ctx, img); err != nil {
			return fmt.Errorf("image %s: %w", img.Ref, err)
		}
	}
	if err := waitReady(ctx, cl); err != nil {
		return err
	}

	log.Info("running the suite", "procs", procs, "report-dir", reportDir, "node-log", node.LogPath)
	args := []string{
		"--procs", fmt.Sprint(procs), "--timeout", "3h",
		"--focus", focus, "--skip", skip,
		"--junit-report", "junit.xml", "--output-dir", reportDir,
		filepath.Join(kubeBin, "e2e.test"), "--",
		"--kubeconfig", cl.Admin, "--provider", "local", "--node-os-distro", "debian",
		"--report-dir", reportDir,
	}
	cmd := exec.CommandContext(ctx, filepath.Join(kubeBin, "ginkgo"), append(args, extra...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Ctrl-C: ginkgo interrupts the running specs, waits for their cleanup
	// and still writes the report; that can take minutes.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Minute
	err = cmd.Run()
	copyLog(node.LogPath, filepath.Join(reportDir, "microlet.log"), log)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("the suite failed (%v): %s", err, filepath.Join(reportDir, "junit.xml"))
	}
	return err
}

// installBashStatic installs Debian's bash-static, the agnhost image's
// shell, when it is missing.
func installBashStatic(log hclog.Logger) error {
	if _, err := os.Stat(bashStatic); err == nil {
		return nil
	}
	log.Info("installing bash-static")
	cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "bash-static")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install bash-static: %w: %s", err, out)
	}
	return nil
}

// agnhostSource is the directory of agnhost's sources in the module cache,
// for porter's certificate.
func agnhostSource() (string, error) {
	root, err := devnode.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(root, "hack", "tools", "conformance")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate k8s.io/kubernetes in the module cache: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "images", "agnhost"), nil
}

// waitReady waits until the node registered and is Ready.
func waitReady(ctx context.Context, cl *devrun.Cluster) error {
	name := cl.NodeName
	err := wait.PollUntilContextTimeout(ctx, time.Second, readyTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := cl.Control.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready within %s (%w); its log: %s", name, readyTimeout, err, cl.Node.LogPath)
	}
	return nil
}

// copyLog keeps the node's log next to the report: Close removes the node's
// directory.
func copyLog(from, to string, log hclog.Logger) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		log.Error("keeping the node's log", "error", err)
	}
}
