package nodeapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// nodeLogs serves /logs/: files and directory listings of node_log_dir, as
// upstream's http.FileServer over /var/log, but opened through os.Root:
// no path, ".." or symlink leads out of the directory (a container that
// can write to /var/log cannot plant a link to /etc/shadow there).
func (h *handlers) nodeLogs() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Opened per request: the directory may be replaced while the node
		// runs (log rotation, a remount).
		root, err := os.OpenRoot(h.cfg.NodeLogDir)
		if err != nil {
			h.log.Error("cannot open the node log directory", "error", err)
			http.Error(w, "the node log directory cannot be opened", http.StatusInternalServerError)
			return
		}
		defer root.Close()
		http.StripPrefix("/logs/", http.FileServerFS(confinedFS{root, h.log})).ServeHTTP(w, r)
	})
}

// confinedFS opens only directories and regular files whose identity lies
// under the root, and turns every refusal into a permission error, which the
// file server answers with 403 instead of 500.
type confinedFS struct {
	root *os.Root
	log  hclog.Logger
}

func (c confinedFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	// O_NONBLOCK: opening a FIFO or a device would otherwise block a thread
	// until a writer comes, which no request deadline can interrupt.
	f, err := c.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		err = servable(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Debug("/logs refused a path", "path", name, "error", err)
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}

// servable refuses what is not a directory or a regular file, and a regular
// file with more than one link: a hard link in the directory may name a file
// outside it (/etc/shadow), and the link count is the only sign of it.
func servable(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case info.IsDir():
		return nil
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s)", f.Name(), info.Mode().Type())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%s has %d hard links, some may lie outside the directory", f.Name(), st.Nlink)
	}
	return nil
}
