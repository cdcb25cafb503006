package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	nodeutil "k8s.io/component-helpers/node/util"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/cluster/thisnode"
)

// Upstream's figures (kubelet_node_status.go, kubelet.go).
const (
	// statusUpdateRetry is how many times a status post is tried, the
	// first on the cached Node, the others on a fresh one.
	statusUpdateRetry = 5
	// registerBackoffStart and registerBackoffMax bound the waits between
	// registration attempts.
	registerBackoffStart = 100 * time.Millisecond
	registerBackoffMax   = 7 * time.Second
	// readyCheckPeriod is how often the node checks, until it is first
	// posted Ready, whether it has become so (fastStatusUpdateOnce).
	readyCheckPeriod = 100 * time.Millisecond
)

// Source gives the node facts. Facts must be cheap (it is read every
// readyCheckPeriod until the node is Ready); Images asks the runtime.
type Source interface {
	Facts() Facts
	Images(ctx context.Context) ([]*runtimeapi.Image, error)
}

// Options configure an Updater.
type Options struct {
	Client   kubernetes.Interface
	NodeName string
	// Node watches the node's own Node (the same watch admission and
	// mirror pods read); the caller runs it.
	Node         *thisnode.Informer
	Registration Registration
	Source       Source
	// UpdateFrequency is how often the status is computed
	// (node_status_update_frequency); ReportFrequency how often it is
	// posted when unchanged (node_status_report_frequency).
	UpdateFrequency, ReportFrequency time.Duration
	// OnEvent receives the node events status changes call for; nil drops
	// them.
	OnEvent func(Event)
	// Outage is the node's log of the API server's outages, as the updater
	// sees them (apiclient.Outages.Part; NewOutage in tests).
	Outage *apiclient.Outage
	// Kick asks for a sync at once (the node started or stopped shutting
	// down, upstream's syncNodeStatus call); nil: the period only.
	Kick   <-chan struct{}
	Logger hclog.Logger
	// Clock is the real one when nil.
	Clock clock.WithTicker
}

// Updater registers the node and keeps its status. Run starts it.
type Updater struct {
	opts  Options
	log   hclog.Logger
	clock clock.WithTicker
	// deleted is signalled when the Node leaves the API server.
	deleted chan struct{}

	// What only the Run goroutine touches.
	registered  bool
	schedule    reportSchedule
	devices     sets.Set[v1.ResourceName]
	readyPosted bool
	// unschedulable is spec.unschedulable as last seen (the kubelet
	// starts from false: a Node cordoned before the start is an event).
	unschedulable bool

	firstRegistration chan struct{}
	started           time.Time
}

// New builds an updater; opts.Node is run by the caller.
func New(opts Options) *Updater {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.OnEvent == nil {
		opts.OnEvent = func(Event) {}
	}
	u := &Updater{
		opts: opts, log: opts.Logger, clock: opts.Clock,
		deleted:           make(chan struct{}, 1),
		schedule:          reportSchedule{period: opts.ReportFrequency},
		devices:           sets.New[v1.ResourceName](),
		firstRegistration: make(chan struct{}),
	}
	opts.Node.OnDelete(func() {
		select {
		case u.deleted <- struct{}{}:
		default:
		}
	})
	return u
}

// Registered is closed once the node is first registered.
func (u *Updater) Registered() <-chan struct{} { return u.firstRegistration }

// Node is the node's Node as last seen from the API server.
func (u *Updater) Node() (*v1.Node, bool) {
	node := u.opts.Node.Get()
	return node, node != nil
}

// Run registers the node, posts its status every update period when it
// changed (or the report period passed), and registers it again when it is
// deleted, until ctx ends.
func (u *Updater) Run(ctx context.Context) {
	u.started = u.clock.Now()
	tick := u.clock.NewTicker(u.opts.UpdateFrequency)
	defer tick.Stop()
	readyCheck := u.clock.NewTicker(readyCheckPeriod)
	defer readyCheck.Stop()
	u.sync(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.deleted:
			u.log.Warn("the node's Node was deleted; registering it again", "node", u.opts.NodeName)
			u.registered = false
			u.sync(ctx)
		case <-tick.C():
			u.sync(ctx)
		case <-u.opts.Kick:
			u.sync(ctx)
		case <-readyCheck.C():
			// Until the node is posted Ready, post as soon as it is:
			// the scheduler waits for it.
			if !u.readyPosted && len(u.opts.Source.Facts().NotReady) == 0 {
				u.sync(ctx)
			}
			if u.readyPosted {
				readyCheck.Stop()
			}
		}
	}
}

// sync registers the node when needed, then posts its status if due. A
// Node just created carries the status already.
func (u *Updater) sync(ctx context.Context) {
	if !u.registered {
		created, ok := u.register(ctx)
		if created || !ok {
			return
		}
	}
	err := u.updateStatus(ctx)
	if errors.Is(err, errNodeGone) {
		u.registered = false
		created, ok := u.register(ctx)
		if created || !ok {
			return
		}
		err = u.updateStatus(ctx)
	}
	if err != nil {
		u.failed("node status not posted; retrying every update period", err)
	}
}

// failed reports a failure to the outage log, which warns once per outage
// (the API server may be away for minutes); each failure is logged only for
// debugging.
func (u *Updater) failed(msg string, err error) {
	u.log.Debug(msg, "node", u.opts.NodeName, "error", err)
	u.opts.Outage.Observe(err)
}

// succeeded ends the updater's part of an outage.
func (u *Updater) succeeded() { u.opts.Outage.Observe(nil) }

var errNodeGone = errors.New("the node's Node is gone")

// register creates the Node, or reconciles the one that exists, retrying
// with backoff. It says whether it created the Node, and false for ok when
// ctx ended first.
func (u *Updater) register(ctx context.Context) (created, ok bool) {
	for wait := registerBackoffStart; ; wait = min(2*wait, registerBackoffMax) {
		created, err := u.tryRegister(ctx)
		if err == nil {
			u.succeeded()
			u.registered = true
			select {
			case <-u.firstRegistration:
			default:
				close(u.firstRegistration)
			}
			return created, true
		}
		u.failed("registering the node failed; retrying", err)
		select {
		case <-ctx.Done():
			return false, false
		case <-u.clock.After(wait):
		}
	}
}

func (u *Updater) tryRegister(ctx context.Context) (created bool, err error) {
	nodes := u.opts.Client.CoreV1().Nodes()
	f := u.facts(ctx)
	now := u.clock.Now()
	initial, events := InitialNode(u.opts.NodeName, u.opts.Registration, f, now)
	node, err := nodes.Create(ctx, initial, metav1.CreateOptions{})
	switch {
	case err == nil:
		u.log.Info("registered the node", "node", node.Name)
		u.posted(now, true, node, f, events)
		return true, nil
	case apierrors.IsAlreadyExists(err), apierrors.IsForbidden(err):
		// Forbidden: creating may be refused while the Node exists.
	default:
		return false, fmt.Errorf("create: %w", err)
	}
	existing, err := nodes.Get(ctx, u.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("get the existing Node: %w", err)
	}
	u.log.Info("the node was registered before; reconciling it", "node", existing.Name)
	original := existing.DeepCopy()
	if ReconcileExisting(existing, initial) {
		if _, _, err := nodeutil.PatchNodeStatus(u.opts.Client.CoreV1(), types.NodeName(u.opts.NodeName), original, existing); err != nil {
			return false, fmt.Errorf("reconcile the existing Node: %w", err)
		}
	}
	return false, nil
}

// updateStatus posts the status if it changed or the report period passed,
// as the kubelet's updateNodeStatus: the first try on the informer's Node,
// the retries on the API server's.
func (u *Updater) updateStatus(ctx context.Context) error {
	var errs []error
	for try := range statusUpdateRetry {
		base, err := u.current(ctx, try)
		if err != nil {
			return err
		}
		if e, ok := schedulableEvent(base, u.unschedulable); ok {
			u.unschedulable = base.Spec.Unschedulable
			u.emit(e)
		}
		node := base.DeepCopy()
		labelsSet := ensureRequiredLabels(node)
		f := u.facts(ctx)
		now := u.clock.Now()
		events := SetStatus(node, f, now)
		changed := labelsSet || StatusChanged(&base.Status, &node.Status)
		if !u.schedule.due(now, changed) {
			return nil
		}
		ready, _ := findCondition(node, v1.NodeReady)
		if holdNotReady(!u.schedule.last.Before(u.started), now.Sub(u.started), u.opts.UpdateFrequency, ready.Status == v1.ConditionTrue) {
			return nil
		}
		updated, _, err := nodeutil.PatchNodeStatus(u.opts.Client.CoreV1(), types.NodeName(u.opts.NodeName), base, node)
		if apierrors.IsNotFound(err) {
			return errNodeGone
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u.succeeded()
		u.posted(now, changed, updated, f, events)
		return nil
	}
	return fmt.Errorf("posting node status failed %d times: %w", statusUpdateRetry, errors.Join(errs...))
}

// current is the Node to compute the status on: the informer's on the first
// try (no request), the API server's on retries or before the informer
// has it.
func (u *Updater) current(ctx context.Context, try int) (*v1.Node, error) {
	if try == 0 {
		if node := u.opts.Node.Get(); node != nil {
			return node, nil
		}
	}
	node, err := u.opts.Client.CoreV1().Nodes().Get(ctx, u.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, errNodeGone
	}
	if err != nil {
		return nil, fmt.Errorf("get the node's Node: %w", err)
	}
	return node, nil
}

// posted records a status the API server accepted.
func (u *Updater) posted(now time.Time, changed bool, node *v1.Node, f Facts, events []Event) {
	u.schedule.posted(now, changed, rand.Float64())
	u.devices = sets.KeySet(f.DeviceCapacity)
	if c, ok := findCondition(node, v1.NodeReady); ok && c.Status == v1.ConditionTrue {
		u.readyPosted = true
	}
	for _, e := range events {
		u.emit(e)
	}
}

func (u *Updater) emit(e Event) {
	u.log.Info("node status", "reason", e.Reason, "message", e.Message)
	u.opts.OnEvent(e)
}

// facts are the source's, with the images and the device resources that
// went away since the last post.
func (u *Updater) facts(ctx context.Context) Facts {
	f := u.opts.Source.Facts()
	images, err := u.opts.Source.Images(ctx)
	if err != nil {
		u.log.Warn("the node's image list is unknown", "error", err)
	}
	f.Images = Images(images)
	f.RemovedDevices = sets.List(u.devices.Difference(sets.KeySet(f.DeviceCapacity)))
	return f
}
