package devnode

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/lastresort"
)

// Options configure Start.
type Options struct {
	// Dir holds the node's files (containerd's content and snapshots, CNI
	// configuration, logs). It is created, must be empty if it exists,
	// and is removed by Close. Default: a new temporary directory.
	Dir string
	// Logger gets what the node does (not containerd's own log, which is
	// in Node.LogPath). Default: hclog's default logger, named "devnode".
	Logger hclog.Logger
	// Images are built and imported besides the pause and busybox images.
	Images []Image
	// RegistryCAs are registries containerd pulls from over TLS, by host
	// (and port, "127.0.0.1:5000"), each with the CA certificate file it
	// trusts for it: a hosts.toml per host under the node's own registry
	// config_path. Other registries keep containerd's defaults.
	RegistryCAs map[string]string
}

// Node is a private containerd with its own CNI network and images. Many
// can run on one host at once; they share no state.
type Node struct {
	// Dir holds the node's files; RunDir (/run/microlet-devnode/N) its
	// socket and containerd's and runc's state.
	Dir, RunDir string
	// Socket is containerd's CRI (and containerd API) endpoint, a unix
	// socket path; Endpoint is "unix://" + Socket, as the kubelet's
	// containerRuntimeEndpoint takes it.
	Socket, Endpoint string
	// PID is containerd's; Restart changes it.
	PID int
	// ConfigPath is containerd's configuration, LogPath its output.
	ConfigPath, LogPath string
	// CNIConfDir holds the network's conflist; CNIBinDir the plugins.
	CNIConfDir, CNIBinDir string
	// Network is the CNI network's name, Subnet its pod CIDR (e.g.
	// 10.88.7.0/24) and Bridge its bridge device.
	Network, Subnet, Bridge string
	// PauseImage is the sandbox image, TestImage the busybox image.
	PauseImage, TestImage string

	log      hclog.Logger
	slot     slot
	rootDir  string // containerd's root
	stateDir string // containerd's state
	runcRoot string
	ipamDir  string
	optDir   string
	// registryCAs as Options.RegistryCAs.
	registryCAs map[string]string
	conn        *grpc.ClientConn
	runtime     runtimeapi.RuntimeServiceClient
	images      runtimeapi.ImageServiceClient
	mu          sync.Mutex // guards the fields below
	containerd  process
	kubelets    []*Kubelet
	closed      bool
	closeDone   chan struct{} // closed once the first Close has finished
	// unregister takes Close off the lastresort watchdog's list.
	unregister func()
}

// newNode lays out the paths of the node in slot s living in dir.
func newNode(s slot, dir string, log hclog.Logger) *Node {
	n := &Node{
		Dir:        dir,
		RunDir:     s.runDir(),
		CNIConfDir: filepath.Join(dir, "cni", "net.d"),
		CNIBinDir:  CNIBinDir,
		Network:    s.network(),
		Subnet:     s.subnet().String(),
		Bridge:     s.bridge(),
		PauseImage: DefaultPauseImage,
		TestImage:  DefaultTestImage,
		ConfigPath: filepath.Join(dir, "containerd", "config.toml"),
		LogPath:    filepath.Join(dir, "containerd", "containerd.log"),
		log:        log.With("node", s.bridge()),
		slot:       s,
		rootDir:    filepath.Join(dir, "containerd", "root"),
		optDir:     filepath.Join(dir, "containerd", "opt"),
		ipamDir:    filepath.Join(dir, "cni", "ipam"),
		stateDir:   filepath.Join(s.runDir(), "state"),
		runcRoot:   filepath.Join(s.runDir(), "runc"),
	}
	// The socket's name is the node's own, not the slot's: an agent left
	// running by an earlier node on this slot (a scratch run, a killed
	// test) must find no runtime there rather than this node's, whose pods
	// it would take for orphans and kill.
	n.Socket = filepath.Join(n.RunDir, fmt.Sprintf("containerd-%08x.sock", crc32.ChecksumIEEE([]byte(dir))))
	n.Endpoint = "unix://" + n.Socket
	return n
}

// Start brings up a node: it installs missing packages (as root), builds
// the images, claims a slot (subnet, bridge, run directory), writes the
// configuration, starts containerd, waits for its CRI to report the
// runtime and the network ready and imports the images. On error it
// leaves nothing behind.
func Start(ctx context.Context, opts Options) (_ *Node, err error) {
	log := opts.Logger
	if log == nil {
		log = hclog.L().Named("devnode")
	}
	if err := ensurePrerequisites(ctx, log); err != nil {
		return nil, err
	}
	// Build before claiming anything: a broken image leaves nothing to undo.
	images := append([]Image{PauseImage(DefaultPauseImage), BusyboxImage(DefaultTestImage)}, opts.Images...)
	archives := make([]archive, len(images))
	for i, img := range images {
		if archives[i], err = imageArchive(img); err != nil {
			return nil, err
		}
	}
	dir, err := prepareDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	warnIfDiskFull(dir, log)
	s, err := claimSlot(ctx, dir, log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n := newNode(s, dir, log)
	n.registryCAs = opts.RegistryCAs
	defer func() {
		if err != nil {
			if cerr := n.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up after the failed start: %w", cerr))
			}
		}
	}()
	if err := n.writeConfig(); err != nil {
		return nil, err
	}
	if err := n.dial(); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	for i, img := range images {
		if err := n.importArchive(ctx, img.Ref, archives[i]); err != nil {
			return nil, err
		}
	}
	n.unregister = lastresort.Register("devnode "+n.Bridge+" in "+n.Dir, n.Close)
	n.log.Info("node ready", "socket", n.Socket, "subnet", n.Subnet, "bridge", n.Bridge, "dir", n.Dir)
	return n, nil
}

// prepareDir creates the node's directory: a new temporary one, or dir,
// which must be new or empty because Close removes it.
func prepareDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "microlet-devnode-")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("node directory %s is not empty: want a new or empty directory, since Close removes it", dir)
	}
	return dir, nil
}

// writeConfig writes containerd's configuration and the CNI conflist.
func (n *Node) writeConfig() error {
	for _, d := range []string{n.rootDir, n.optDir, n.CNIConfDir, n.ipamDir, n.stateDir, n.runcRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	conflist, err := cniConfList(n.Network, n.Bridge, n.Subnet, n.ipamDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.CNIConfDir, "10-"+n.Network+".conflist"), conflist, 0o644); err != nil {
		return err
	}
	registryDir, err := writeRegistryHosts(filepath.Join(n.Dir, "containerd", "certs.d"), n.registryCAs)
	if err != nil {
		return err
	}
	config, err := containerdConfig{
		RegistryConfigPath: registryDir,
		Root:               n.rootDir,
		State:              n.stateDir,
		Socket:             n.Socket,
		Opt:                n.optDir,
		RuncRoot:           n.runcRoot,
		CNIBinDir:          n.CNIBinDir,
		CNIConfDir:         n.CNIConfDir,
		SandboxImage:       n.PauseImage,
	}.render()
	if err != nil {
		return err
	}
	return os.WriteFile(n.ConfigPath, config, 0o644)
}

// dial opens the CRI connection; gRPC connects lazily and reconnects
// across restarts of containerd.
func (n *Node) dial() error {
	conn, err := grpc.NewClient(n.Endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)),
		// containerd restarts in about a second; do not back off for longer.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	)
	if err != nil {
		return fmt.Errorf("CRI client for %s: %w", n.Endpoint, err)
	}
	n.conn = conn
	n.runtime = runtimeapi.NewRuntimeServiceClient(conn)
	n.images = runtimeapi.NewImageServiceClient(conn)
	return nil
}

// RuntimeClient is a CRI runtime client connected to the node.
func (n *Node) RuntimeClient() runtimeapi.RuntimeServiceClient { return n.runtime }

// ImageClient is a CRI image client connected to the node.
func (n *Node) ImageClient() runtimeapi.ImageServiceClient { return n.images }

// startContainerd starts containerd and waits for its CRI to be ready.
func (n *Node) startContainerd(ctx context.Context) error {
	logFile, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// --address repeats the configuration so that the socket names the
	// process in its command line, as it does the shims.
	cmd := exec.Command("containerd", "--config", n.ConfigPath, "--address", n.Socket)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := startProcess(cmd)
	if err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	n.mu.Lock()
	n.containerd = p
	n.PID = p.pid
	n.mu.Unlock()
	rec, err := readRecord(n.RunDir)
	if err != nil {
		return err
	}
	rec.ContainerdPID = p.pid
	if err := writeRecord(n.RunDir, rec); err != nil {
		return err
	}
	n.log.Debug("started containerd", "pid", p.pid, "config", n.ConfigPath, "log", n.LogPath)
	return n.waitReady(ctx, p)
}

// readyTimeout bounds the wait for a fresh containerd to serve the CRI.
const readyTimeout = time.Minute

// waitReady polls the CRI Status until the runtime and the network are
// ready: the network is ready once the CRI plugin has loaded the conflist.
func (n *Node) waitReady(ctx context.Context, p process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	n.conn.ResetConnectBackoff()
	var last error
	for {
		callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := n.runtime.Status(callCtx, &runtimeapi.StatusRequest{})
		callCancel()
		if err == nil {
			if err = runtimeNotReady(resp.GetStatus()); err == nil {
				return nil
			}
		}
		if status.Code(err) == codes.Unimplemented {
			return fmt.Errorf("containerd serves no CRI (its CRI plugin failed to load): %v; its log ends with:\n%s", err, n.logTail())
		}
		last = err
		select {
		case <-p.exited:
			return fmt.Errorf("containerd exited before its CRI was ready: %v; its log ends with:\n%s", last, n.logTail())
		case <-ctx.Done():
			return fmt.Errorf("containerd's CRI at %s not ready: %v (%w); its log ends with:\n%s", n.Socket, last, ctx.Err(), n.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runtimeNotReady says which CRI status condition is not yet true.
func runtimeNotReady(status *runtimeapi.RuntimeStatus) error {
	for _, want := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		ok := false
		for _, c := range status.GetConditions() {
			if c.GetType() == want {
				if !c.GetStatus() {
					return fmt.Errorf("%s is false: %s %s", want, c.GetReason(), c.GetMessage())
				}
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("no %s condition yet", want)
		}
	}
	return nil
}

// logTail returns the end of containerd's log, for error messages.
func (n *Node) logTail() string {
	data, err := os.ReadFile(n.LogPath)
	if err != nil {
		return err.Error()
	}
	return lastLines(data, 20)
}

// Restart kills containerd with SIGKILL and starts it again on the same
// state, as when the runtime crashes under the agent: shims and containers
// keep running. It returns once the CRI is ready again.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	p, closed := n.containerd, n.closed
	n.mu.Unlock()
	if closed {
		return errors.New("restart: the node is closed")
	}
	if err := p.kill(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	n.log.Info("killed containerd; starting it again", "pid", p.pid)
	return n.startContainerd(ctx)
}

// ImportImage builds img (or takes it from the cache) and imports it; it
// returns once the CRI lists it.
func (n *Node) ImportImage(ctx context.Context, img Image) error {
	a, err := imageArchive(img)
	if err != nil {
		return err
	}
	return n.importArchive(ctx, img.Ref, a)
}

// importTimeout bounds one import, including the wait for the CRI to list
// the image.
const importTimeout = time.Minute

func (n *Node) importArchive(ctx context.Context, ref string, a archive) error {
	ctx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ctr", "--address", n.Socket, "--namespace", "k8s.io", "images", "import", a.path)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("import %s from %s: %w: %s", ref, a.path, err, out)
	}
	// The CRI plugin learns of the image from containerd's event stream;
	// a replaced image shows its old ID until then.
	for {
		resp, err := n.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			return fmt.Errorf("image status of %s after its import: %w", ref, err)
		}
		if resp.GetImage().GetId() == a.imageID {
			n.log.Debug("imported image", "ref", ref, "id", a.imageID)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("imported %s, but the CRI does not list it as %s: %w", ref, a.imageID, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ImageLayout is img built as an OCI image layout tar (what ImportImage
// imports), cached as every devnode image: for pushing it to a registry.
func ImageLayout(img Image) (string, error) {
	a, err := imageArchive(img)
	return a.path, err
}

// RemoveImage removes an image through the CRI.
func (n *Node) RemoveImage(ctx context.Context, ref string) error {
	if _, err := n.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}
