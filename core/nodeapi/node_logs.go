package nodeapi

import (
	"errors"
	"io/fs"
	"net/http"
	"os"

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
		http.StripPrefix("/logs/", http.FileServerFS(confinedFS{root.FS(), h.log})).ServeHTTP(w, r)
	})
}

// confinedFS turns os.Root's refusals (a symlink or path leading out of the
// directory) into permission errors, which the file server answers with
// 403, instead of 500.
type confinedFS struct {
	fs.FS
	log hclog.Logger
}

func (c confinedFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		c.log.Debug("/logs refused a path", "path", name, "error", err)
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}
