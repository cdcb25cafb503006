package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
)

// Host launches, supervises and hot-swaps plugin processes.
type Host struct {
	opts Options
	log  hclog.Logger

	// ctx ends when Close starts: it cuts short launches the host started
	// on its own (restarts, binary changes) and drains of retired processes.
	ctx    context.Context
	cancel context.CancelFunc

	reconciling sync.Mutex // one Reconcile (or Close) at a time

	mu     sync.Mutex
	slots  map[string]*Plugin // by slotKey
	closed bool

	retiring sync.WaitGroup // processes replaced by a swap, draining and stopping
	watcher  *dirWatcher
}

// New checks opts, prepares the socket directory and, with WatchDir, starts
// watching the plugin directory. It starts no plugin: Reconcile does.
func New(opts Options) (*Host, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("plugin host options: %w", err)
	}
	if err := prepareSocketDir(opts.SocketDir); err != nil {
		return nil, err
	}
	h := &Host{opts: opts, log: opts.Logger.Named("pluginhost"), slots: map[string]*Plugin{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if opts.WatchDir {
		if h.watcher, err = watchDir(opts.Dir, h.log, h.binaryChanged); err != nil {
			h.cancel()
			return nil, err
		}
	}
	return h, nil
}

// Reconcile makes the running plugins match specs: it starts new ones,
// stops removed ones, and hot-swaps those whose binary content, sha256,
// args, env or config changed. For singleton kinds a spec of another name
// replaces the running plugin by a hot swap. A spec whose new process fails
// keeps the old process. Every spec that can be applied is; the errors of
// the others are returned, joined.
func (h *Host) Reconcile(ctx context.Context, specs []Spec) error {
	h.reconciling.Lock()
	defer h.reconciling.Unlock()

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("plugin host is closed")
	}
	current := make([]string, 0, len(h.slots))
	for key := range h.slots {
		current = append(current, key)
	}
	plan, planErr := planReconcile(current, specs)
	removed := make([]*Plugin, 0, len(plan.remove))
	for _, key := range plan.remove {
		removed = append(removed, h.slots[key])
		delete(h.slots, key)
	}
	type application struct {
		slot *Plugin
		spec resolvedSpec
	}
	applications := make([]application, 0, len(plan.apply))
	for key, spec := range plan.apply {
		slot, ok := h.slots[key]
		if !ok {
			slot = newPlugin(h, spec.Kind, spec.Name)
			h.slots[key] = slot
			go h.supervise(slot)
		}
		applications = append(applications, application{slot, spec})
	}
	h.mu.Unlock()

	// Slots are independent: apply to all at once, so one slow plugin does
	// not hold up the others.
	errs := make([]error, len(applications)+1)
	errs[0] = planErr
	var wg sync.WaitGroup
	for _, slot := range removed {
		wg.Go(func() { slot.send(command{op: opStop, ctx: ctx, reason: "removed from the config"}) })
	}
	for i, a := range applications {
		wg.Go(func() { errs[i+1] = a.slot.send(command{op: opApply, ctx: ctx, spec: a.spec}) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Plugin returns the slot of a singleton kind, or nil if none is configured
// (or kind is not a singleton kind: see Plugins).
func (h *Host) Plugin(kind Kind) *Plugin {
	if !kind.Singleton() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.slots[string(kind)]
}

// Plugins returns every slot of kind, ordered by name.
func (h *Host) Plugins(kind Kind) []*Plugin {
	h.mu.Lock()
	var out []*Plugin
	for _, slot := range h.slots {
		if slot.kind == kind {
			out = append(out, slot)
		}
	}
	h.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Status describes every slot, ordered by kind and name.
func (h *Host) Status() []Status {
	h.mu.Lock()
	slots := make([]*Plugin, 0, len(h.slots))
	for _, slot := range h.slots {
		slots = append(slots, slot)
	}
	h.mu.Unlock()
	out := make([]Status, len(slots))
	for i, slot := range slots {
		out[i] = slot.Status()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Validate launches spec's plugin transiently, checks its identity, asks it
// to validate spec's config block, and stops it. It returns the plugin's own
// findings (empty when the block is valid), or an error when the plugin
// could not be asked.
func (h *Host) Validate(ctx context.Context, spec Spec) ([]ConfigError, error) {
	resolved, err := resolveSpec(spec)
	if err != nil {
		return nil, err
	}
	launchCtx, cancel := h.launchContext(ctx)
	defer cancel()
	pr, err := h.launch(launchCtx, resolved, launchValidate)
	if err != nil {
		return nil, err
	}
	defer pr.stop(ctx)
	resp, err := basev1.NewPluginServiceClient(pr.conn).ValidateConfig(launchCtx, &basev1.ValidateConfigRequest{
		ApiVersion: pr.apiVersion,
		Config:     resolved.config,
	})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: ValidateConfig: %w", resolved, err)
	}
	var out []ConfigError
	for _, e := range resp.GetErrors() {
		out = append(out, ConfigError{Path: e.GetPath(), Message: e.GetMessage()})
	}
	return out, nil
}

// Close stops every plugin: a Shutdown RPC (at most 2s each, in parallel),
// then the process. It returns when all are gone, or earlier with ctx's
// error, after killing what is left.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	// Cut short the launches in flight, a Reconcile's included, then wait
	// for that Reconcile: it may still add slots.
	h.cancel()
	if h.watcher != nil {
		h.watcher.close()
	}
	h.reconciling.Lock()
	defer h.reconciling.Unlock()
	h.mu.Lock()
	slots := make([]*Plugin, 0, len(h.slots))
	for _, slot := range h.slots {
		slots = append(slots, slot)
	}
	h.slots = map[string]*Plugin{}
	h.mu.Unlock()

	var wg sync.WaitGroup
	for _, slot := range slots {
		wg.Go(func() { slot.send(command{op: opStop, ctx: ctx, reason: "plugin host closing"}) })
	}
	wg.Go(h.retiring.Wait)
	wg.Wait()
	return ctx.Err()
}

// launchContext is ctx, also ended when the host closes.
func (h *Host) launchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// binaryDigest checks spec's binary in the plugin directory as a launch
// would and returns its sha256.
func (h *Host) binaryDigest(spec resolvedSpec) (string, error) {
	bin, err := openVerifiedBinary(h.opts.Dir, spec.Binary, spec.SHA256, os.Geteuid())
	if err != nil {
		return "", err
	}
	defer bin.Close()
	if spec.SHA256 != "" {
		return spec.SHA256, nil // verified against the pin just now
	}
	return bin.sha256()
}

// binaryChanged tells the slots that run the named binary, or every slot
// when the directory itself changed (name "").
func (h *Host) binaryChanged(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, slot := range h.slots {
		if name == "" || slot.binaryName() == name { // "": the directory itself
			slot.notifyBinaryChanged()
		}
	}
}

// retireInBackground drains and stops a process a swap replaced.
func (h *Host) retireInBackground(pr *process) {
	h.retiring.Go(func() {
		if !pr.retire(h.opts.DrainTimeout, h.ctx.Done()) {
			h.log.Warn("retired plugin still had calls in flight; stopping it anyway",
				"plugin", pr.spec.String(), "pid", pr.pid, "drain_timeout", h.opts.DrainTimeout)
		}
		pr.stop(context.Background())
	})
}

func (h *Host) emit(e Event) {
	if h.opts.OnEvent == nil {
		return
	}
	e.Time = time.Now()
	h.opts.OnEvent(e)
}
