package bridge

import (
	"context"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/microlet/microlet/sdk"
)

// recreateDelay is how long a deleted kubelet.sock (or device plugin
// directory) stays gone before the bridge serves it again. A newer bridge
// process replaces the socket by deleting it and listening at once; the
// delay lets it finish, so that the older process sees the newer socket
// and yields instead of replacing it back.
const recreateDelay = time.Second

// dirWatch follows the device plugin directory: kubelet.sock deleted or
// replaced, plugin sockets removed, the directory itself removed.
type dirWatch struct {
	dir     string
	watcher *fsnotify.Watcher
}

func newDirWatch(dir string) (*dirWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	return &dirWatch{dir: dir, watcher: w}, nil
}

// run applies the directory's changes to p until ctx ends.
func (d *dirWatch) run(ctx context.Context, p *Plugin) {
	defer d.watcher.Close()
	recheck := time.NewTimer(0)
	<-recheck.C
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-d.watcher.Events:
			if !ok {
				return
			}
			gone := ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
			switch {
			case ev.Name == p.socket.path && ev.Has(fsnotify.Create):
				p.socket.check()
			case ev.Name == p.socket.path && gone, ev.Name == d.dir && gone:
				recheck.Reset(recreateDelay)
			case gone:
				p.socketGone(ev.Name)
			}
		case err, ok := <-d.watcher.Errors:
			if !ok {
				return
			}
			sdk.Log().Error("watching the device plugin directory", "dir", d.dir, "error", err)
		case <-recheck.C:
			d.rewatch()
			p.socket.check()
		}
	}
}

// rewatch makes the directory again, and watches it again, if it was
// removed: a removed directory is no longer watched.
func (d *dirWatch) rewatch() {
	if _, err := os.Stat(d.dir); err == nil {
		return
	}
	if err := os.MkdirAll(d.dir, 0o750); err != nil {
		sdk.Log().Error("cannot create the device plugin directory again", "dir", d.dir, "error", err)
		return
	}
	if err := d.watcher.Add(d.dir); err != nil {
		sdk.Log().Error("cannot watch the device plugin directory again", "dir", d.dir, "error", err)
		return
	}
	sdk.Log().Warn("the device plugin directory was removed; created it again", "dir", d.dir)
}
