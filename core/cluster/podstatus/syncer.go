// Package podstatus writes the node's pod statuses to the API server, as
// upstream's status manager does (pkg/kubelet/status/status_manager.go):
// it follows the core's status manager, patches each pod's status
// subresource with only what changed (the pod of an API source, or the
// mirror pod of a static one), never moves a terminal phase, and deletes a
// pod being deleted once it has finished on the node, with grace 0 and a
// UID precondition. A periodic pass reconciles what the API shows with
// what the node knows (after a restart of either side); while the API
// server cannot be reached it waits for that pass instead of retrying every
// change, and says so once.
package podstatus

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/pods/status"
)

// syncPeriod is upstream's: how often every status is checked against the
// API's, and how soon a failed write is tried again.
const syncPeriod = 10 * time.Second

// writers is how many pods' writes are in flight at once. Upstream writes
// one at a time, so when a burst of pods turns Running together the last
// one's status waits for every other's round trip: 30 pods started on 2
// loaded cores showed 25 to 50 ms a patch and the last Running written
// 0.5 s after its status was known. A few at once hide the round trip;
// the client's rate limiter (kube_api_qps, kube_api_burst) still bounds
// the rate.
const writers = 8

// Statuses is the core's status manager as the syncer reads it.
type Statuses interface {
	Statuses() ([]status.VersionedPodStatus, <-chan struct{})
}

// Options are what the syncer is built from.
type Options struct {
	Client kubernetes.Interface
	// Pods lists the node's pods as the API server has them (mirror pods
	// included); HasSynced says the list has been read.
	Pods      corelisters.PodLister
	HasSynced func() bool
	Statuses  Statuses
	// CouldHaveRunningContainers says whether a pod (by its node UID) may
	// still have containers running, as upstream's podDeletionSafety.
	CouldHaveRunningContainers func(types.UID) bool
	// Outage is the node's log of the API server's outages, as the
	// syncer sees them (apiclient.Outages.Part; NewOutage in tests).
	Outage *apiclient.Outage
	Logger hclog.Logger
}

// Syncer writes pod statuses to the API server.
type Syncer struct {
	opts Options
	log  hclog.Logger
	// written is, by API pod UID, the status version last written and the
	// resourceVersion the write produced. Each pod's entry is written by
	// the one writer of that pod in a batch.
	mu      sync.Mutex
	written map[types.UID]writtenStatus
}

type writtenStatus struct {
	version         uint64
	resourceVersion string
}

// New makes a syncer; Run starts it.
func New(opts Options) *Syncer {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Syncer{opts: opts, log: opts.Logger.Named("podstatus"), written: map[types.UID]writtenStatus{}}
}

// Run writes statuses as they change, and checks all every syncPeriod,
// until ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), s.opts.HasSynced) {
		return
	}
	ticker := time.NewTicker(syncPeriod)
	defer ticker.Stop()
	for {
		statuses, changed := s.opts.Statuses.Statuses()
		s.opts.Outage.Observe(s.syncBatch(ctx, statuses))
		if s.opts.Outage.Failing() {
			changed = nil // wait for the tick: no busy retries while the API server is away
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-ticker.C:
		}
	}
}

// syncBatch writes every status the API does not have yet, and deletes
// the pods that are done. It returns the API server's first error.
func (s *Syncer) syncBatch(ctx context.Context, statuses []status.VersionedPodStatus) error {
	live := make(map[types.UID]bool, len(statuses))
	var g errgroup.Group // not WithContext: one pod's error stops no other's write
	g.SetLimit(writers)
	for i := range statuses {
		st := &statuses[i]
		apiPod, err := s.opts.Pods.Pods(st.Namespace).Get(st.Name)
		if err != nil {
			apiPod = nil
		}
		pod, ok := target(apiPod, st.UID)
		if !ok || live[pod.UID] {
			continue // a pod is written by one writer at a time
		}
		live[pod.UID] = true
		g.Go(func() error { return s.syncPod(ctx, pod, st) })
	}
	firstErr := g.Wait()
	s.mu.Lock()
	for uid := range s.written {
		if !live[uid] {
			delete(s.written, uid)
		}
	}
	s.mu.Unlock()
	return firstErr
}

func (s *Syncer) lastWritten(uid types.UID) (writtenStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.written[uid]
	return w, ok
}

func (s *Syncer) setWritten(uid types.UID, w *writtenStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w == nil {
		delete(s.written, uid)
		return
	}
	s.written[uid] = *w
}

// syncPod writes one pod's status when the API lacks it, and deletes the
// pod when it can go. Errors are the API server's, worth a retry.
func (s *Syncer) syncPod(ctx context.Context, pod *v1.Pod, st *status.VersionedPodStatus) error {
	couldRun := s.opts.CouldHaveRunningContainers(st.UID)
	w, seen := s.lastWritten(pod.UID)
	// Written at this version: patch again only if the API's copy changed
	// since, and differs (reconcile after a restart of either side).
	if !seen || w.version < st.Version || w.resourceVersion != pod.ResourceVersion {
		merged, heldBack := mergeStatus(pod.Status, st.Status, couldRun)
		patch, unchanged, err := statusPatch(pod.UID, pod.Status, merged)
		if err != nil {
			s.log.Error("cannot build a pod's status patch", "pod", pod.Namespace+"/"+pod.Name, "error", err)
			return nil
		}
		if !unchanged {
			updated, err := s.opts.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			switch {
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				return nil // deleted, or recreated under the same name
			case err != nil:
				return err
			}
			s.log.Debug("pod status written", "pod", pod.Namespace+"/"+pod.Name, "version", st.Version, "patch", string(patch))
			pod = updated
		}
		if heldBack {
			s.setWritten(pod.UID, nil) // not all written: look again next pass
		} else {
			s.setWritten(pod.UID, &writtenStatus{version: st.Version, resourceVersion: pod.ResourceVersion})
		}
	}
	if !canBeDeleted(pod, st.PodIsFinished, couldRun) {
		return nil
	}
	err := s.opts.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil
	case err != nil:
		return err
	}
	s.log.Debug("pod finished on the node and removed from the API", "pod", pod.Namespace+"/"+pod.Name)
	return nil
}
