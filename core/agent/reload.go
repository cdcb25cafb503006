package agent

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/microlet/microlet/core/config"
)

// reloadDebounce lets an editor finish writing (several events per save)
// before the config is read again.
const reloadDebounce = 300 * time.Millisecond

// watchConfig reloads on SIGHUP and when the main config file or a file in
// the drop-in dir changes, until ctx ends.
func (a *Agent) watchConfig(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	changed := a.watchConfigFiles(ctx)
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			a.log.Info("SIGHUP: reloading config")
			a.Reload(ctx)
		case <-changed:
			debounce = time.After(reloadDebounce)
		case <-debounce:
			debounce = nil
			a.log.Info("config changed on disk: reloading")
			a.Reload(ctx)
		}
	}
}

// watchConfigFiles reports changes to the main file and the drop-in dir.
// It watches the main file's directory, because editors and config
// management replace files by rename. A nil channel (never ready) means
// nothing to watch.
func (a *Agent) watchConfigFiles(ctx context.Context) <-chan struct{} {
	main, dropIns := a.opts.Load.MainFile, a.opts.Load.DropInDir
	if main == "" && dropIns == "" {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		a.log.Warn("cannot watch the config files; reload with SIGHUP", "error", err)
		return nil
	}
	var mainAbs string
	if main != "" {
		mainAbs, _ = filepath.Abs(main)
		if err := w.Add(filepath.Dir(mainAbs)); err != nil {
			a.log.Warn("cannot watch the config file; reload with SIGHUP", "file", main, "error", err)
		}
	}
	var dropAbs string
	if dropIns != "" {
		dropAbs, _ = filepath.Abs(dropIns)
		if err := w.Add(dropAbs); err != nil {
			a.log.Warn("cannot watch the config dir; reload with SIGHUP", "dir", dropIns, "error", err)
		}
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Name == mainAbs || (dropAbs != "" && filepath.Dir(ev.Name) == dropAbs) {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				a.log.Warn("config watch", "error", err)
			}
		}
	}()
	return out
}

// reloadable keys apply without a restart; every other changed key is
// reported so the operator knows a restart is due.
var reloadable = map[string]bool{"log_level": true, "plugin": true}

// restartOnlyChanges lists the keys (by their config names) that differ
// between two configs and only take effect after a restart.
func restartOnlyChanges(prev, next *config.Config) []string {
	var keys []string
	pv, nv := reflect.ValueOf(*prev), reflect.ValueOf(*next)
	t := pv.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("config")
		if !f.IsExported() || name == "-" || reloadable[name] {
			continue
		}
		if !reflect.DeepEqual(pv.Field(i).Interface(), nv.Field(i).Interface()) {
			keys = append(keys, name)
		}
	}
	return keys
}
