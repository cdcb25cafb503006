package bridge

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/microlet/microlet/sdk"
)

// staleSocket is a socket found in the device plugin directory before the
// bridge served kubelet.sock: a plugin registered with an earlier bridge
// process (a core restart, a hot swap) or a dead plugin's leftover.
type staleSocket struct {
	path string
	info os.FileInfo
}

// staleSockets lists the sockets in dir other than kubelet.sock. Only
// sockets: a file or directory an operator keeps there is never touched.
// Symlinks are not followed.
func staleSockets(dir, kubeletSocket string) []staleSocket {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // made by serve: nothing in it yet
	}
	if err != nil {
		sdk.Log().Error("cannot list the device plugin directory for the sockets of an earlier bridge's plugins", "dir", dir, "error", err)
		return nil
	}
	var out []staleSocket
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.Type()&fs.ModeSocket == 0 || path == kubeletSocket {
			continue
		}
		info, err := os.Lstat(path)
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, staleSocket{path: path, info: info})
	}
	return out
}

// removeStale removes the sockets staleSockets found, each only if the path
// still holds that very socket. The kubelet removes the sockets in its
// device plugin directory when it starts, so that plugins which watch
// their own socket (rather than kubelet.sock) see it vanish and register
// again; the bridge does the same when a process of it starts. It does so
// after serving the new kubelet.sock, not before as the kubelet does, so
// that a plugin reacting at once finds kubelet.sock ready; a plugin that
// made a new socket meanwhile (one that watches kubelet.sock) keeps it.
func removeStale(stale []staleSocket) {
	for _, s := range stale {
		info, err := os.Lstat(s.path)
		if err != nil || !os.SameFile(info, s.info) {
			continue
		}
		if err := os.Remove(s.path); err != nil {
			sdk.Log().Error("cannot remove the socket of a device plugin registered with an earlier bridge; it may not register again", "socket", s.path, "error", err)
			continue
		}
		sdk.Log().Info("removed the socket of a device plugin registered with an earlier bridge, so that it registers again", "socket", s.path)
	}
}
