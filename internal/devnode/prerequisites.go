package devnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// CNIBinDir is where Debian's containernetworking-plugins installs the CNI
// plugins.
const CNIBinDir = "/usr/lib/cni"

// ErrPrerequisites is wrapped by Start's error when a program the node
// needs is missing and cannot be installed (not root, or apt-get failed).
var ErrPrerequisites = errors.New("devnode prerequisites missing")

// requirement is a host program the node runs and the Debian package that
// ships it.
type requirement struct {
	program string // a name looked up on PATH, or an absolute path
	pkg     string
}

var requirements = []requirement{
	{"containerd", "containerd"},
	{"containerd-shim-runc-v2", "containerd"},
	{"ctr", "containerd"}, // imports the images
	{"runc", "runc"},
	{CNIBinDir + "/bridge", "containernetworking-plugins"},
	{CNIBinDir + "/host-local", "containernetworking-plugins"},
	{CNIBinDir + "/portmap", "containernetworking-plugins"},
	{CNIBinDir + "/loopback", "containernetworking-plugins"},
	{busyboxPath, "busybox-static"},
	{"ip", "iproute2"},       // deletes the bridge
	{"iptables", "iptables"}, // portmap runs it, on every CNI DEL too
}

// missingPackages returns the Debian packages whose programs are missing,
// in a stable order.
func missingPackages(reqs []requirement) []string {
	var pkgs []string
	for _, r := range reqs {
		if slices.Contains(pkgs, r.pkg) {
			continue
		}
		var err error
		if r.program == busyboxPath {
			// The image needs a static busybox; Debian's plain busybox
			// package is dynamic.
			err = checkStatic(busyboxPath)
		} else {
			_, err = exec.LookPath(r.program)
		}
		if err != nil {
			pkgs = append(pkgs, r.pkg)
		}
	}
	return pkgs
}

// installMu serialises installs of the nodes one process starts at once.
var installMu sync.Mutex

// ensurePrerequisites installs what the node needs.
func ensurePrerequisites(ctx context.Context, log hclog.Logger) error {
	return ensurePackages(ctx, log, requirements)
}

// EnsureProgram installs Debian package pkg when program is missing, as a
// node's own prerequisites are: a test's other programs (etcd) are installed
// by the test that needs them, so `make test` on a fresh machine runs every
// suite.
func EnsureProgram(ctx context.Context, log hclog.Logger, program, pkg string) error {
	return ensurePackages(ctx, log, []requirement{{program, pkg}})
}

// ensurePackages installs what reqs miss with apt-get when running as
// root, and otherwise says which command to run.
func ensurePackages(ctx context.Context, log hclog.Logger, reqs []requirement) error {
	installMu.Lock()
	defer installMu.Unlock()
	missing := missingPackages(reqs)
	if len(missing) == 0 {
		return nil
	}
	install := append([]string{"install", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300"}, missing...)
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: %s; as root, run: DEBIAN_FRONTEND=noninteractive apt-get %s",
			ErrPrerequisites, strings.Join(missing, ", "), strings.Join(install, " "))
	}
	log.Info("installing missing packages with apt-get", "packages", missing)
	if err := aptGet(ctx, install...); err != nil {
		// A fresh machine may have no package lists yet.
		log.Info("apt-get install failed; updating the package lists and retrying", "error", err)
		if err := aptGet(ctx, "update", "-q"); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrPrerequisites, strings.Join(missing, ", "), err)
		}
		if err := aptGet(ctx, install...); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrPrerequisites, strings.Join(missing, ", "), err)
		}
	}
	if still := missingPackages(reqs); len(still) > 0 {
		return fmt.Errorf("%w: apt-get install %s succeeded, yet the programs of %s are still not found (is PATH complete?)",
			ErrPrerequisites, strings.Join(missing, " "), strings.Join(still, ", "))
	}
	return nil
}

func aptGet(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(out, 10))
	}
	return nil
}

// lastLines returns at most n trailing lines of out, for error messages.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
