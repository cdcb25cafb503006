package nodelease

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRenewInterval(t *testing.T) {
	if got := RenewInterval(40); got != 10*time.Second {
		t.Errorf("RenewInterval(40) = %v, want 10s as the kubelet", got)
	}
}

func TestOwnedByNode(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-1"}}
	tests := []struct {
		name      string
		lease     *coordinationv1.Lease
		node      *v1.Node
		wantErr   bool
		wantOwner metav1.OwnerReference
	}{{
		name:      "a new lease gets the Node as owner",
		lease:     &coordinationv1.Lease{},
		node:      node,
		wantOwner: metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "uid-1"},
	}, {
		name:    "no Node yet: not created this time",
		lease:   &coordinationv1.Lease{},
		wantErr: true,
	}, {
		name: "an owned lease is left as it is",
		lease: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "uid-0"}}}},
		wantOwner: metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "uid-0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ownedByNode("node-a", func() (*v1.Node, bool) { return tt.node, tt.node != nil })(tt.lease)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %t", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if len(tt.lease.OwnerReferences) != 1 || tt.lease.OwnerReferences[0] != tt.wantOwner {
				t.Errorf("owners %+v, want %+v", tt.lease.OwnerReferences, tt.wantOwner)
			}
		})
	}
}
