package podsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// pushShutdownGrace lets requests in flight finish when the source stops.
const pushShutdownGrace = 5 * time.Second

// PushConfig configures the push source.
type PushConfig struct {
	// SocketPath is the unix socket to serve on, created with mode 0600:
	// only the node's administrator (root) may push pods. Required;
	// normally <root_dir>/pods.sock.
	SocketPath string
	// TCPAddress optionally serves on a loopback TCP address as well
	// ("127.0.0.1:10260"). Any other address is refused: the endpoint has
	// no authentication.
	TCPAddress string
	// StatePath is the file the pushed pods are saved in, so that they
	// survive a restart; empty keeps them in memory only.
	StatePath string
	// NodeName seeds the pods' identity.
	NodeName string
}

// Push is a local HTTP endpoint to which the node's administrator pushes
// pods:
//
//	POST   /pods                        a Pod or PodList: add or replace those pods
//	PUT    /pods                        a PodList: replace all pushed pods
//	DELETE /pods/{namespace}/{name}     remove a pod
//	GET    /pods                        the pushed pods, as they run, as a PodList
type Push struct {
	cfg       PushConfig
	log       hclog.Logger
	listeners []net.Listener

	// mu orders changes, their saving and their sending.
	mu   sync.Mutex
	pods pushedPods
	ctx  context.Context
	out  chan<- Update
}

// NewPush loads the saved pushed pods and starts listening, so that a
// socket that cannot be served fails the start. Run serves it.
func NewPush(cfg PushConfig, log hclog.Logger) (*Push, error) {
	if cfg.SocketPath == "" || !filepath.IsAbs(cfg.SocketPath) {
		return nil, fmt.Errorf("push socket %q: expected an absolute path", cfg.SocketPath)
	}
	if cfg.NodeName == "" {
		return nil, errors.New("push pod source: the node name is required")
	}
	log = log.Named("podsource.push")
	pods, err := loadPushedPods(cfg.StatePath, cfg.NodeName, log)
	if err != nil {
		return nil, err
	}
	p := &Push{cfg: cfg, log: log, pods: pods}
	unixListener, err := listenUnix(cfg.SocketPath)
	if err != nil {
		return nil, err
	}
	p.listeners = append(p.listeners, unixListener)
	if cfg.TCPAddress != "" {
		tcpListener, err := listenLoopback(cfg.TCPAddress)
		if err != nil {
			p.closeListeners()
			return nil, err
		}
		p.listeners = append(p.listeners, tcpListener)
	}
	return p, nil
}

// Name is "push".
func (p *Push) Name() string { return PushSource }

// Run sends the saved pods, then serves pushes until ctx ends, sending the
// whole set after every change. It removes the socket when it returns.
func (p *Push) Run(ctx context.Context, out chan<- Update) {
	p.mu.Lock()
	p.ctx, p.out = ctx, out
	ok := send(ctx, out, Update{Source: PushSource, Op: OpSet, Pods: p.pods.running()})
	p.mu.Unlock()
	if !ok {
		p.closeListeners()
		return
	}

	server := &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: p.log.StandardLogger(nil)}
	var wg sync.WaitGroup
	for _, l := range p.listeners {
		p.log.Info("serving pushed pods", "address", l.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := server.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				p.log.Error("the push endpoint stopped serving", "address", l.Addr().String(), "error", err)
			}
		}()
	}
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), pushShutdownGrace)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		server.Close()
	}
	wg.Wait()
	if err := os.Remove(p.cfg.SocketPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Warn("cannot remove the push socket", "path", p.cfg.SocketPath, "error", err)
	}
}

// commit saves next, makes it the pushed set and sends it. The caller holds
// p.mu.
func (p *Push) commit(next pushedPods) error {
	if p.cfg.StatePath != "" {
		if err := savePushedPods(p.cfg.StatePath, next); err != nil {
			return err
		}
	}
	p.pods = next
	send(p.ctx, p.out, Update{Source: PushSource, Op: OpSet, Pods: next.running()})
	return nil
}

func (p *Push) closeListeners() {
	for _, l := range p.listeners {
		l.Close()
	}
	if err := os.Remove(p.cfg.SocketPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Warn("cannot remove the push socket", "path", p.cfg.SocketPath, "error", err)
	}
}

// listenUnix listens on a unix socket that is never reachable with wider
// permissions than 0600: it is made in a private directory, restricted,
// then moved into place. A stale socket left by a previous run is replaced;
// any other file in the way is an error.
func listenUnix(path string) (net.Listener, error) {
	if info, err := os.Lstat(path); err == nil {
		if info.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("push socket %s: the path exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("push socket %s: removing the stale socket: %w", path, err)
		}
	}
	private, err := os.MkdirTemp(filepath.Dir(path), ".pods-sock-")
	if err != nil {
		return nil, fmt.Errorf("push socket %s: %w", path, err)
	}
	defer os.RemoveAll(private)
	tmp := filepath.Join(private, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("push socket %s: %w", path, err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // Run removes it under its final name
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("push socket %s: %w", path, err)
	}
	return l, nil
}

// listenLoopback listens on a TCP address that must be a loopback one.
func listenLoopback(address string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("push TCP address %q: %w", address, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("push TCP address %q: only a loopback address (127.0.0.1, ::1, localhost) is allowed, as the endpoint has no authentication", address)
	}
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("push TCP address %q: %w", address, err)
	}
	return l, nil
}
