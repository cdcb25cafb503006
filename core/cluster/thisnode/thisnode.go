// Package thisnode watches the node's own Node object, which admission
// (labels, taints), mirror pods (the owner reference's UID) and the node
// status updater (the cached Node, its deletion) read, as upstream's node
// lister restricted to the node's name: one watch serves them all.
package thisnode

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
)

// Informer holds the latest Node object of the node.
type Informer struct {
	name     string
	informer cache.SharedIndexInformer
}

// New makes the informer of the Node named name; Run starts it. outage
// is the node's log of the API server's outages, as this part sees them.
func New(client kubernetes.Interface, name string, outage *apiclient.Outage) *Informer {
	lw := apiclient.FieldSelected(client.CoreV1().Nodes(), "metadata.name", name, outage)
	informer := cache.NewSharedIndexInformer(lw, &v1.Node{}, 0, cache.Indexers{})
	_ = informer.SetWatchErrorHandlerWithContext(outage.WatchErrorHandler) // not started: cannot fail
	return &Informer{name: name, informer: informer}
}

// Run watches the Node until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.informer.Run(ctx.Done()) }

// HasSynced reports whether the Node has been read (found or not).
func (i *Informer) HasSynced() bool { return i.informer.HasSynced() }

// OnDelete calls f (on the informer's goroutine) whenever the Node is
// deleted; f must not block.
func (i *Informer) OnDelete(f func()) {
	_, _ = i.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { f() }})
}

// Get returns the Node as last seen, nil while it is unknown (not read yet,
// not registered, or deleted). Callers must not modify it.
func (i *Informer) Get() *v1.Node {
	obj, ok, err := i.informer.GetStore().GetByKey(i.name)
	if err != nil || !ok {
		return nil
	}
	node, _ := obj.(*v1.Node)
	return node
}
