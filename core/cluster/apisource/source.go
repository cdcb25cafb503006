// Package apisource is the pod source of a node in a cluster: the pods the
// API server binds to the node, watched with an informer on
// spec.nodeName, as upstream's apiserver source
// (pkg/kubelet/config/apiserver.go). Like upstream it sends the full set of
// the node's pods on every change (podconfig works out what changed), and
// its first set only once the informer has listed them, so the node never
// mistakes "not read yet" for "deleted".
//
// Mirror pods (the API's copies of static pods) are on the node too, but
// they are not pods to run: the source leaves them out and Pods gives them
// to the mirror pod manager and the status syncer.
package apisource

import (
	"context"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/podspec"
)

// Source is the API server's pod source.
type Source struct {
	log      hclog.Logger
	informer cache.SharedIndexInformer
	// nodeHasSynced says the Node informer has listed the node's Node.
	nodeHasSynced cache.InformerSynced
	// changed is signalled, without blocking, on every informer event; the
	// run loop coalesces a burst into one set.
	changed chan struct{}
}

var _ podsource.Source = (*Source)(nil)

// New makes the source of the pods bound to nodeName. Nothing is read
// before Run, and nothing before nodeHasSynced. outage is the node's log of
// the API server's outages, as this part sees them.
func New(client kubernetes.Interface, nodeName string, nodeHasSynced cache.InformerSynced, outage *apiclient.Outage, log hclog.Logger) *Source {
	log = log.Named("apisource")
	lw := apiclient.FieldSelected(client.CoreV1().Pods(v1.NamespaceAll), "spec.nodeName", nodeName, outage)
	// No resync: every change arrives as an event, and a periodic full
	// set would only wake the merge for nothing.
	informer := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = informer.SetWatchErrorHandlerWithContext(outage.WatchErrorHandler) // not started: cannot fail
	s := &Source{log: log, informer: informer, nodeHasSynced: nodeHasSynced, changed: make(chan struct{}, 1)}
	notify := func() {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	return s
}

// Name is upstream's source name, "api".
func (s *Source) Name() string { return podsource.APIServerSource }

// Pods lists the node's pods as the API server has them, mirror pods
// included. Read it after HasSynced.
func (s *Source) Pods() corelisters.PodLister {
	return corelisters.NewPodLister(s.informer.GetIndexer())
}

// HasSynced reports whether the informer has listed the node's pods.
func (s *Source) HasSynced() bool { return s.informer.HasSynced() }

// Run watches the node's pods and sends their full set on every change.
func (s *Source) Run(ctx context.Context, out chan<- podsource.Update) {
	if !cache.WaitForCacheSync(ctx.Done(), s.nodeHasSynced) {
		return
	}
	go s.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return
	}
	s.log.Info("pods from the API server listed", "pods", len(s.informer.GetStore().ListKeys()))
	for {
		if !send(ctx, out, podsource.Update{Op: podsource.OpSet, Pods: s.podsToRun()}) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
	}
}

// podsToRun are copies of the informer's pods, mirror pods left out.
func (s *Source) podsToRun() []*v1.Pod {
	objs := s.informer.GetStore().List()
	pods := make([]*v1.Pod, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*v1.Pod)
		if !ok || IsMirrorPod(pod) {
			continue
		}
		pods = append(pods, pod.DeepCopy())
	}
	return pods
}

// IsMirrorPod reports whether pod is the API's copy of a static pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[podspec.ConfigMirrorAnnotationKey]
	return ok
}

func send(ctx context.Context, out chan<- podsource.Update, u podsource.Update) bool {
	select {
	case out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}
