package mirrorpods

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/cluster/apisource"
	"github.com/microlet/microlet/core/pods/status"
)

// period is how often mirror pods are checked: upstream's housekeeping
// period. A check reads only the informer; it calls the API server only
// to change something.
const period = 2 * time.Second

// Options are what the manager is built from.
type Options struct {
	Client kubernetes.Interface
	// Pods lists the node's pods in the API (mirror pods among them);
	// HasSynced says the list has been read.
	Pods      corelisters.PodLister
	HasSynced func() bool
	// Node is the node's Node object, nil while unknown.
	Node func() *v1.Node
	// Desired are the pods the node's sources want; the static ones are
	// mirrored.
	Desired func() []*v1.Pod
	// Active are the desired pods admitted and not terminating.
	Active func() []*v1.Pod
	// Outage is the node's log of the API server's outages, as the
	// manager sees them (apiclient.Outages.Part; NewOutage in tests).
	Outage *apiclient.Outage
	Logger hclog.Logger
}

// Manager keeps the mirror pods in line with the static pods.
type Manager struct {
	opts Options
	log  hclog.Logger
}

// New makes a manager; Run starts it.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Manager{opts: opts, log: opts.Logger.Named("mirrorpods")}
}

// Run checks the mirror pods every period until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), m.opts.HasSynced) {
		return
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		m.opts.Outage.Observe(m.sync(ctx))
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// sync applies one plan: deletions first, so a replaced mirror pod's name
// is free for its successor.
func (m *Manager) sync(ctx context.Context) error {
	all, err := m.opts.Pods.List(labels.Everything())
	if err != nil {
		return err
	}
	var mirrors []*v1.Pod
	for _, p := range all {
		if apisource.IsMirrorPod(p) {
			mirrors = append(mirrors, p)
		}
	}
	var static []*v1.Pod
	for _, p := range m.opts.Desired() {
		if status.IsStaticPod(p) {
			static = append(static, p)
		}
	}
	active := sets.New[types.UID]()
	for _, p := range m.opts.Active() {
		active.Insert(p.UID)
	}
	p := planMirrors(static, func(pod *v1.Pod) bool { return active.Has(pod.UID) }, mirrors, m.opts.Node())
	var errs []error
	pods := m.opts.Client.CoreV1().Pods
	for _, mirror := range p.delete {
		err := pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64),
			Preconditions:      metav1.NewUIDPreconditions(string(mirror.UID)),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
			continue
		}
		m.log.Info("mirror pod deleted", "pod", fullName(mirror), "uid", mirror.UID)
	}
	for _, mirror := range p.create {
		created, err := pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// The replaced one is still going, or an API pod holds the name;
			// the next pass tells.
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		m.log.Info("mirror pod created", "pod", fullName(created), "uid", created.UID)
	}
	return errors.Join(errs...)
}
