// Package services keeps the cluster's Services for containers' service
// variables (enableServiceLinks and the master service's
// KUBERNETES_SERVICE_*), as upstream's service lister: one informer on
// every Service of every namespace, which the Node authorizer allows a
// node. Only what the variables need is kept of each Service, so that a
// cluster of many Services costs the node little memory.
package services

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
)

// Informer holds the cluster's Services as last seen.
type Informer struct {
	informer cache.SharedIndexInformer
}

// New makes the informer; Run starts it. outage is the node's log of the
// API server's outages (apiclient.Outages), as this part sees them.
func New(client kubernetes.Interface, outage *apiclient.Outage) *Informer {
	lw := apiclient.All(client.CoreV1().Services(metav1.NamespaceAll), outage)
	informer := cache.NewSharedIndexInformer(lw, &v1.Service{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// Neither can fail before the informer runs.
	_ = informer.SetWatchErrorHandlerWithContext(outage.WatchErrorHandler)
	_ = informer.SetTransform(slim)
	return &Informer{informer: informer}
}

// slim keeps of a Service what its variables are made of: namespace,
// name, cluster IP and ports (and the resource version the informer
// needs).
func slim(obj any) (any, error) {
	s, ok := obj.(*v1.Service)
	if !ok {
		return obj, nil // a tombstone: its object was slimmed when stored
	}
	out := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, ResourceVersion: s.ResourceVersion},
		Spec:       v1.ServiceSpec{ClusterIP: s.Spec.ClusterIP},
	}
	for _, p := range s.Spec.Ports {
		out.Spec.Ports = append(out.Spec.Ports, v1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port})
	}
	return out, nil
}

// Run watches the Services until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.informer.Run(ctx.Done()) }

// HasSynced reports whether the Services have been listed once.
func (i *Informer) HasSynced() bool { return i.informer.HasSynced() }

// List is the Services of namespace and of the default namespace (where
// the master service is) as last seen; callers must not modify them.
func (i *Informer) List(namespace string) []*v1.Service {
	var out []*v1.Service
	for _, ns := range []string{metav1.NamespaceDefault, namespace} {
		objs, _ := i.informer.GetIndexer().ByIndex(cache.NamespaceIndex, ns) // the index exists
		for _, o := range objs {
			if s, ok := o.(*v1.Service); ok {
				out = append(out, s)
			}
		}
		if namespace == metav1.NamespaceDefault {
			break
		}
	}
	return out
}
