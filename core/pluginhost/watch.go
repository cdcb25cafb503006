package pluginhost

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// watchDebounce lets a replacement settle: install(1) removes, creates,
// writes and chmods the file in a burst, and one swap should follow, not
// four.
const watchDebounce = 100 * time.Millisecond

// binaryEvents are what replacing a file produces on its name: Create for a
// rename onto it (mv, install) or a new file, Write and Chmod for a copy.
const binaryEvents = fsnotify.Create | fsnotify.Rename | fsnotify.Write | fsnotify.Chmod

// dirWatcher reports, debounced, which file names in the plugin directory
// changed, and "" for the directory itself (its mode or owner: a fix of a
// refused directory, or a new danger to report).
type dirWatcher struct {
	dir     string
	watcher *fsnotify.Watcher
	log     hclog.Logger
	changed func(name string)

	mu      sync.Mutex
	pending map[string]*time.Timer
	closed  bool
	done    chan struct{}
}

func watchDir(dir string, log hclog.Logger, changed func(name string)) (*dirWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch plugin directory: %w", err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch plugin directory %s: %w", dir, err)
	}
	dw := &dirWatcher{dir: filepath.Clean(dir), watcher: w, log: log, changed: changed, pending: map[string]*time.Timer{}, done: make(chan struct{})}
	go dw.run()
	return dw, nil
}

func (dw *dirWatcher) run() {
	defer close(dw.done)
	for {
		select {
		case ev, ok := <-dw.watcher.Events:
			if !ok {
				return
			}
			switch {
			case filepath.Clean(ev.Name) == dw.dir:
				dw.debounce("")
			case ev.Op&binaryEvents != 0:
				dw.debounce(filepath.Base(ev.Name))
			}
		case err, ok := <-dw.watcher.Errors:
			if !ok {
				return
			}
			dw.log.Error("watching the plugin directory", "error", err)
		}
	}
}

func (dw *dirWatcher) debounce(name string) {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	if dw.closed {
		return
	}
	if t, ok := dw.pending[name]; ok {
		t.Reset(watchDebounce)
		return
	}
	dw.pending[name] = time.AfterFunc(watchDebounce, func() {
		dw.mu.Lock()
		delete(dw.pending, name)
		closed := dw.closed
		dw.mu.Unlock()
		if !closed {
			dw.changed(name)
		}
	})
}

func (dw *dirWatcher) close() {
	dw.mu.Lock()
	dw.closed = true
	for _, t := range dw.pending {
		t.Stop()
	}
	dw.mu.Unlock()
	dw.watcher.Close()
	<-dw.done
}
