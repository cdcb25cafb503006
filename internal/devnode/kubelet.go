package devnode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/microlet/microlet/internal/freeport"
)

// ErrNoKubelet is wrapped by StartKubelet's error when there is no kubelet
// binary to run.
var ErrNoKubelet = errors.New("no upstream kubelet binary (build it with hack/kube-tools/build.sh)")

// KubeletOptions configure StartKubelet.
type KubeletOptions struct {
	// Binary is the kubelet to run. Default: kubelet in $KUBE_TOOLS_BIN,
	// else in .cache/kube/bin of the microlet checkout.
	Binary string
	// RootDir is the kubelet's --root-dir. Default: <node Dir>/kubelet.
	RootDir string
	// Configure, if set, adjusts the KubeletConfiguration before the
	// kubelet starts.
	Configure func(*kubeletconfig.KubeletConfiguration)
	// Args are extra command-line flags, e.g. "--v=4".
	Args []string
}

// Kubelet is an upstream kubelet running standalone (static pods only, no
// API server) against a node, the real counterpart of microlet in
// benchmarks.
type Kubelet struct {
	// Binary is the kubelet that runs, PID its process.
	Binary string
	PID    int
	// RootDir is the kubelet's --root-dir; ManifestDir its staticPodPath,
	// watched for pod manifests; ConfigPath its KubeletConfiguration;
	// LogPath its output.
	RootDir, ManifestDir, ConfigPath, LogPath string
	// HealthzURL answers 200 once the kubelet runs; ServerAddress
	// (127.0.0.1:port) is its HTTPS server (/metrics, /stats/summary,
	// /pods), which lets anyone in.
	HealthzURL, ServerAddress string
	// CgroupRoot is the cgroup the kubelet puts its kubepods tree in, private
	// to this kubelet.
	CgroupRoot string

	node       *Node
	podLogsDir string
	hostLock   *os.File // held while the kubelet owns the host-wide paths
	proc       process
	closeOnce  sync.Once
	closeErr   error
}

// StartKubelet runs an upstream kubelet in standalone mode against node:
// cgroupfs driver, swap allowed, a private root directory, static pods
// from ManifestDir, anonymous access to its server bound to loopback, no
// read-only port, iptables left alone, and everything else the kubelet
// would put in a host-wide place moved under RootDir. It returns once
// /healthz answers. A node serves one agent at a time: the kubelet stops
// pods it does not know. Node.Close closes the kubelet if Close was not
// called.
func StartKubelet(ctx context.Context, node *Node, opts KubeletOptions) (_ *Kubelet, err error) {
	bin, err := kubeletBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	root := opts.RootDir
	if root == "" {
		root = filepath.Join(node.Dir, "kubelet")
	}
	k := &Kubelet{
		Binary:      bin,
		RootDir:     root,
		ManifestDir: filepath.Join(root, "manifests"),
		ConfigPath:  filepath.Join(root, "config.yaml"),
		LogPath:     filepath.Join(root, "kubelet.log"),
		CgroupRoot:  "/microlet-devnode-" + strconv.Itoa(int(node.slot)) + "-kubelet",
		node:        node,
		podLogsDir:  filepath.Join(root, "pod-logs"),
	}
	if k.hostLock, err = lockKubeletHost(ctx); err != nil {
		return nil, err
	}
	if err := node.addKubelet(k); err != nil {
		k.hostLock.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, k.Close())
		}
	}()
	for _, d := range []string{k.ManifestDir, k.podLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := CreateCgroup(k.CgroupRoot); err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	healthzPort, serverPort := ports[0], ports[1]
	k.HealthzURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", healthzPort)
	k.ServerAddress = fmt.Sprintf("127.0.0.1:%d", serverPort)
	config := k.config(node.Endpoint, healthzPort, serverPort)
	if opts.Configure != nil {
		opts.Configure(config)
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(k.ConfigPath, data, 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(k.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// --cert-dir defaults to /var/lib/kubelet/pki, not below --root-dir.
	args := []string{"--config=" + k.ConfigPath, "--root-dir=" + k.RootDir, "--cert-dir=" + filepath.Join(k.RootDir, "pki")}
	cmd := exec.Command(bin, append(args, opts.Args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if k.proc, err = startProcess(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	k.PID = k.proc.pid
	node.log.Info("started kubelet", "pid", k.PID, "root_dir", k.RootDir, "log", k.LogPath)
	if err := k.waitHealthy(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// kubeletBinary resolves KubeletOptions.Binary's default.
func kubeletBinary(bin string) (string, error) {
	if bin == "" {
		dir, err := KubeToolsDir()
		if err != nil {
			return "", fmt.Errorf("%w: %v; set %s or KubeletOptions.Binary", ErrNoKubelet, err, EnvKubeTools)
		}
		bin = filepath.Join(dir, "kubelet")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoKubelet, err)
	}
	return bin, nil
}

// PodLogsDir is the kubelet's podLogsDir, private to it: the pods' log
// directories, which its container log manager rotates.
func (k *Kubelet) PodLogsDir() string { return k.podLogsDir }

// config is the kubelet's configuration: defaults, except what standalone
// operation on a devnode needs.
func (k *Kubelet) config(endpoint string, healthzPort, serverPort int) *kubeletconfig.KubeletConfiguration {
	yes, no := true, false
	healthz := int32(healthzPort)
	return &kubeletconfig.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: kubeletconfig.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		ContainerRuntimeEndpoint: endpoint,
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               k.CgroupRoot,
		FailSwapOn:               &no,
		// cgroup v1 is what this kind of machine has.
		FailCgroupV1:       &no,
		StaticPodPath:      k.ManifestDir,
		FileCheckFrequency: metav1.Duration{Duration: time.Second},
		PodLogsDir:         k.podLogsDir,
		VolumePluginDir:    filepath.Join(k.RootDir, "volume-plugins"),
		Address:            "127.0.0.1",
		Port:               int32(serverPort),
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        &healthz,
		Authentication: kubeletconfig.KubeletAuthentication{
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: &yes},
			Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: &no},
		},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow},
		// Its KUBE-* chains would be host-wide state.
		MakeIPTablesUtilChains: &no,
	}
}

// waitHealthy polls /healthz until it answers 200.
func (k *Kubelet) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		resp, err := client.Get(k.HealthzURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", k.HealthzURL, resp.Status)
		}
		last = err
		select {
		case <-k.proc.exited:
			return fmt.Errorf("kubelet exited before it was healthy: %v; its log ends with:\n%s", last, k.logTail())
		case <-ctx.Done():
			return fmt.Errorf("kubelet not healthy: %v (%w); its log ends with:\n%s", last, ctx.Err(), k.logTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (k *Kubelet) logTail() string {
	data, err := os.ReadFile(k.LogPath)
	if err != nil {
		return err.Error()
	}
	return lastLines(data, 20)
}

// Close stops the kubelet and removes what it left: the node's pod
// sandboxes (a kubelet leaves its pods running when it exits), mounts under
// RootDir, its /var/log/containers symlinks, its cgroups and RootDir.
// Idempotent.
func (k *Kubelet) Close() error {
	k.closeOnce.Do(func() { k.closeErr = k.close() })
	return k.closeErr
}

func (k *Kubelet) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var errs []error
	add := func(step string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("kubelet: %s: %w", step, err))
		}
	}
	add("stop", k.proc.stop(containerdGrace))
	// Only a kubelet that ran can have made pods.
	if k.PID != 0 && k.node.containerdRunning() {
		add("remove pod sandboxes", k.node.removePodSandboxes(ctx))
	}
	add("remove log symlinks", removeSymlinksInto(legacyContainerLogsDir, k.podLogsDir))
	add("remove device plugin files", removeDevicePluginFiles())
	add("remove cgroups", RemoveCgroup(k.CgroupRoot))
	mountsErr := UnmountUnder(k.RootDir)
	add("unmount", mountsErr)
	if mountsErr == nil {
		add("remove the root directory", os.RemoveAll(k.RootDir))
	}
	k.node.removeKubelet(k)
	if k.hostLock != nil {
		k.hostLock.Close()
	}
	return errors.Join(errs...)
}

func (n *Node) addKubelet(k *Kubelet) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("start kubelet: the node is closed")
	}
	n.kubelets = append(n.kubelets, k)
	return nil
}

func (n *Node) removeKubelet(k *Kubelet) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, x := range n.kubelets {
		if x == k {
			n.kubelets = append(n.kubelets[:i], n.kubelets[i+1:]...)
			return
		}
	}
}

// The kubelet's device manager serves the device plugin registration socket
// at a fixed path (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1
// KubeletSocket) whatever --root-dir says, and keeps its checkpoint next to
// it. Two kubelets on one host would take the socket from each other.
const (
	devicePluginDir         = "/var/lib/kubelet/device-plugins"
	devicePluginSocket      = "kubelet.sock"
	devicePluginCheckpoint  = "kubelet_internal_checkpoint"
	kubeletHostLockFileName = "kubelet.lock"
)

// lockKubeletHost waits until no other devnode kubelet runs on the host and
// returns the lock that says this one does; closing the file releases it.
func lockKubeletHost(ctx context.Context) (*os.File, error) {
	f, err := openInRunRoot(kubeletHostLockFileName)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("another devnode kubelet runs on this host (it owns %s): %w", filepath.Join(devicePluginDir, devicePluginSocket), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removeDevicePluginFiles removes the device manager's socket and
// checkpoint, then the directories above them that are left empty.
func removeDevicePluginFiles() error {
	var errs []error
	for _, name := range []string{devicePluginSocket, devicePluginCheckpoint} {
		if err := os.Remove(filepath.Join(devicePluginDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, dir := range []string{devicePluginDir, filepath.Dir(devicePluginDir), legacyContainerLogsDir} {
		// rmdir removes only what is empty.
		unix.Rmdir(dir)
	}
	return errors.Join(errs...)
}

// legacyContainerLogsDir is where the kubelet links every container's log
// for log collectors (pkg/kubelet/kuberuntime/legacy.go), whatever its
// configuration.
const legacyContainerLogsDir = "/var/log/containers"

// removeSymlinksInto removes the symlinks in dir that point below target.
func removeSymlinksInto(dir, target string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		dest, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(dest, target+"/") {
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
