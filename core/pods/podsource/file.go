package podsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultFileCheckFrequency is file_check_frequency's default, upstream's
// fileCheckFrequency: how often the whole static pod path is re-read.
const DefaultFileCheckFrequency = 20 * time.Second

// fileSettleDelay is how long the path must be quiet before a manifest that
// does not decode is judged broken: in a burst of events (an editor
// truncating, writing and renaming) it may be half-written. Manifests that
// decode are used at once; upstream reads at every event too.
const fileSettleDelay = 100 * time.Millisecond

// FileConfig configures the static pod path source.
type FileConfig struct {
	// Path is static_pod_path: a directory of manifests, one Pod per file,
	// or a single manifest file.
	Path string
	// CheckFrequency is file_check_frequency; 0 means the default.
	CheckFrequency time.Duration
	// NodeName seeds the pods' identity.
	NodeName string
}

// File is the static pod path source. It watches the path with inotify,
// reads it as soon as it changes, and re-reads it every CheckFrequency in
// case an event was missed. Unlike
// upstream, a manifest that was good and turns broken keeps its last good
// pod until it is fixed or removed (see docs/pod-sources.md).
type File struct {
	cfg    FileConfig
	log    hclog.Logger
	errors *prometheus.CounterVec

	// Owned by Run.
	manifests map[string]*manifestState
	pathError string
	watchErr  string
	sent      []types.UID
	sentOnce  bool
}

// NewFile makes the static pod path source; metrics go to reg.
func NewFile(cfg FileConfig, log hclog.Logger, reg prometheus.Registerer) (*File, error) {
	if cfg.Path == "" || !filepath.IsAbs(cfg.Path) {
		return nil, fmt.Errorf("static_pod_path %q: expected an absolute path", cfg.Path)
	}
	if cfg.NodeName == "" {
		return nil, errors.New("file pod source: the node name is required")
	}
	if cfg.CheckFrequency == 0 {
		cfg.CheckFrequency = DefaultFileCheckFrequency
	}
	counter, err := registerManifestErrors(reg)
	if err != nil {
		return nil, err
	}
	return &File{
		cfg:       FileConfig{Path: filepath.Clean(cfg.Path), CheckFrequency: cfg.CheckFrequency, NodeName: cfg.NodeName},
		log:       log.Named("podsource.file"),
		errors:    counter,
		manifests: make(map[string]*manifestState),
	}, nil
}

// Name is "file".
func (f *File) Name() string { return FileSource }

// Run sends the path's pods as an OpSet at once and whenever they change,
// until ctx ends. A missing path sends an empty set, so the source counts as
// read, and is watched for its creation.
func (f *File) Run(ctx context.Context, out chan<- Update) {
	w, err := fsnotify.NewWatcher()
	var events <-chan fsnotify.Event
	var watchErrors <-chan error
	if err != nil {
		f.log.Error("cannot watch the static pod path; changes are seen only at the periodic re-read",
			"path", f.cfg.Path, "check_frequency", f.cfg.CheckFrequency, "error", err)
	} else {
		defer w.Close()
		events, watchErrors = w.Events, w.Errors
	}
	f.log.Info("watching the static pod path", "path", f.cfg.Path, "check_frequency", f.cfg.CheckFrequency)

	ticker := time.NewTicker(f.cfg.CheckFrequency)
	defer ticker.Stop()
	settled := true
	for {
		f.watch(w)
		deferred, ok := f.sync(ctx, out, settled)
		if !ok {
			return
		}
		if settled, ok = f.waitForChange(ctx, ticker.C, events, watchErrors, deferred); !ok {
			return
		}
	}
}

// waitForChange blocks until the path is due to be read again: at once when
// it changed, at the periodic re-read, or, when settle is set (the last
// read deferred a manifest that did not decode), once the path has been
// quiet for fileSettleDelay. settled says the read is one that judges such
// manifests; ok is false when ctx ended.
func (f *File) waitForChange(ctx context.Context, tick <-chan time.Time, events <-chan fsnotify.Event, watchErrors <-chan error, settle bool) (settled, ok bool) {
	var quiet <-chan time.Time
	if settle {
		quiet = time.After(fileSettleDelay)
	}
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-tick:
			return true, true
		case <-quiet:
			return true, true
		case e := <-events:
			if f.concerns(e) {
				drainEvents(events)
				return false, true
			}
		case err := <-watchErrors:
			f.log.Warn("inotify reported an error; re-reading the static pod path", "path", f.cfg.Path, "error", err)
			return false, true
		}
	}
}

// drainEvents takes the events already queued: the read about to start sees
// what they report, so a burst of changes costs one read, not one per file.
func drainEvents(events <-chan fsnotify.Event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

// sync scans the path and sends its pods if they differ from what was sent.
// Unless settled, a manifest that does not decode is deferred (deferred is
// true) rather than judged. ok is false when ctx ended.
func (f *File) sync(ctx context.Context, out chan<- Update, settled bool) (deferred, ok bool) {
	pods, deferred, ok := f.scan(settled)
	if !ok {
		return deferred, true
	}
	uids := make([]types.UID, len(pods))
	for i, pod := range pods {
		uids[i] = pod.UID
	}
	if f.sentOnce && slices.Equal(uids, f.sent) {
		return deferred, true
	}
	copies := make([]*v1.Pod, len(pods))
	for i, pod := range pods {
		copies[i] = pod.DeepCopy()
	}
	if !send(ctx, out, Update{Source: FileSource, Op: OpSet, Pods: copies}) {
		return deferred, false
	}
	f.sent, f.sentOnce = uids, true
	return deferred, true
}

// watch keeps inotify watches on the path's parent (to see the path come
// and go) and on the path itself when it is a directory. Watches vanish with
// their directory, so this runs before every scan.
func (f *File) watch(w *fsnotify.Watcher) {
	if w == nil {
		return
	}
	var errs []error
	if err := w.Add(filepath.Dir(f.cfg.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if info, err := os.Stat(f.cfg.Path); err == nil && info.IsDir() {
		if err := w.Add(f.cfg.Path); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != f.watchErr && err != nil {
		f.log.Warn("cannot watch the static pod path; changes are seen only at the periodic re-read",
			"path", f.cfg.Path, "check_frequency", f.cfg.CheckFrequency, "error", err)
	}
	f.watchErr = msg
}

// concerns says whether an event is about the path or a manifest in it.
func (f *File) concerns(e fsnotify.Event) bool {
	if e.Name == f.cfg.Path {
		return true
	}
	return filepath.Dir(e.Name) == f.cfg.Path && !strings.HasPrefix(filepath.Base(e.Name), ".")
}
