package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/sdk"
)

// kubeletSocket serves the upstream Registration service on kubelet.sock,
// where vendor device plugins look for the kubelet.
//
// The path is shared with whatever else claims it: during a hot swap the
// new bridge process serves it while the old one still runs. The newest
// process wins: serve replaces whatever file is there, and a process that
// finds another process's socket at the path (check) stops serving
// registrations instead of replacing it back. That is also why the
// listener never unlinks the path on close: it would remove the newer
// process's socket.
type kubeletSocket struct {
	path    string
	service pluginapi.RegistrationServer

	mu     sync.Mutex
	server *grpc.Server
	// served is the socket file this process made; nil when it serves none.
	served os.FileInfo
	// yielded: another process serves the path now.
	yielded bool
	closed  bool
}

func newKubeletSocket(path string, service pluginapi.RegistrationServer) *kubeletSocket {
	return &kubeletSocket{path: path, service: service}
}

// serve replaces what is at the path (a stale socket of an earlier
// process, or the socket of the process this one replaces) with a new
// socket, and serves registrations on it.
func (k *kubeletSocket) serve() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.serveLocked()
}

func (k *kubeletSocket) serveLocked() error {
	if err := os.MkdirAll(filepath.Dir(k.path), 0o750); err != nil {
		return fmt.Errorf("create the device plugin directory: %w", err)
	}
	if info, err := os.Lstat(k.path); err == nil {
		if info.Mode()&fs.ModeSocket == 0 {
			return fmt.Errorf("%s exists and is not a socket (mode %v); refusing to replace it", k.path, info.Mode())
		}
		if err := os.Remove(k.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the old %s: %w", k.path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: k.path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("listen on %s: %w", k.path, err)
	}
	ln.SetUnlinkOnClose(false)
	info, err := os.Lstat(k.path)
	if err != nil {
		ln.Close()
		return fmt.Errorf("stat %s after listening on it: %w", k.path, err)
	}
	server := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(server, k.service)
	go func() {
		// Serve returns when the server stops; a failure before then
		// leaves registrations unserved, which check repairs.
		if err := server.Serve(ln); err != nil {
			sdk.Log().Error("the registration server stopped", "socket", k.path, "error", err)
		}
	}()
	k.server, k.served, k.yielded = server, info, false
	sdk.Log().Info("serving device plugin registration", "socket", k.path, "version", pluginapi.Version)
	return nil
}

// check serves the path again if its socket was deleted, and stops serving
// if another process has put its own socket there.
func (k *kubeletSocket) check() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || k.yielded {
		return
	}
	info, err := os.Lstat(k.path)
	switch {
	case err == nil && k.served != nil && os.SameFile(info, k.served):
		return
	case err == nil:
		k.stopLocked()
		k.yielded = true
		sdk.Log().Warn("another process serves device plugin registration now (a newer bridge process); this one stops accepting registrations", "socket", k.path)
	case errors.Is(err, fs.ErrNotExist):
		k.stopLocked()
		sdk.Log().Warn("the registration socket was deleted; serving it again", "socket", k.path)
		if err := k.serveLocked(); err != nil {
			sdk.Log().Error("cannot serve device plugin registration again; vendor plugins cannot register until the next change in the directory", "error", err)
		}
	default:
		sdk.Log().Error("cannot check the registration socket", "socket", k.path, "error", err)
	}
}

// close stops serving and removes the socket if it is still this
// process's.
func (k *kubeletSocket) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if info, err := os.Lstat(k.path); err == nil && k.served != nil && os.SameFile(info, k.served) {
		_ = os.Remove(k.path)
	}
	k.stopLocked()
}

func (k *kubeletSocket) stopLocked() {
	if k.server != nil {
		k.server.Stop()
	}
	k.server, k.served = nil, nil
}
