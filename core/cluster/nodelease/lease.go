// Package nodelease keeps the node's Lease in kube-node-lease, the cheap
// heartbeat the node lifecycle controller watches: component-helpers'
// lease controller, as the kubelet runs it (renewed every quarter of its
// duration, owned by the Node so that it goes with it).
package nodelease

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// renewFraction is the kubelet's nodeLeaseRenewIntervalFraction: a 40 s
// Lease is renewed every 10 s.
const renewFraction = 0.25

// Options configure the Lease.
type Options struct {
	Client   kubernetes.Interface
	NodeName string
	// DurationSeconds is node_lease_duration_seconds.
	DurationSeconds int32
	// Node gives the node's Node as last seen, for the owner reference.
	Node func() (*v1.Node, bool)
	// Clock is the real one when nil.
	Clock clock.Clock
}

// New returns the lease controller; its Run renews the Lease until ctx ends.
func New(opts Options) lease.Controller {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return lease.NewController(opts.Clock, opts.Client, opts.NodeName, opts.DurationSeconds,
		nil, RenewInterval(opts.DurationSeconds), opts.NodeName, v1.NamespaceNodeLease, ownedByNode(opts.NodeName, opts.Node))
}

// RenewInterval is how often a Lease of the given duration is renewed.
func RenewInterval(durationSeconds int32) time.Duration {
	return time.Duration(float64(time.Duration(durationSeconds)*time.Second) * renewFraction)
}

// ownedByNode makes the Node the Lease's owner, so that the garbage
// collector removes the Lease with it (the kubelet's SetNodeOwnerFunc). The
// Node comes from the node's Node informer (thisnode) rather than a GET; until it is
// there the Lease is not created, and the controller tries again next
// interval.
func ownedByNode(name string, node func() (*v1.Node, bool)) func(*coordinationv1.Lease) error {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) > 0 {
			return nil
		}
		n, ok := node()
		if !ok {
			return fmt.Errorf("node %s is not registered yet", name)
		}
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1.SchemeGroupVersion.Version,
			Kind:       "Node",
			Name:       name,
			UID:        n.UID,
		}}
		return nil
	}
}
