//go:build e2e

package nodestatus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/cluster/nodelease"
	"github.com/microlet/microlet/core/cluster/nodestatus"
	"github.com/microlet/microlet/core/cluster/thisnode"
	"github.com/microlet/microlet/internal/devcluster"
)

type source struct{ ready atomic.Bool }

func (s *source) Facts() nodestatus.Facts {
	f := nodestatus.Facts{
		Hostname: "node-a", NodeIPs: []string{"10.0.0.5"},
		Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("20Gi")},
		KubeletVersion: "v1.34.4+microlet.test", ContainerRuntimeVersion: "containerd://2.1.0", KubeletPort: 10250,
	}
	if !s.ready.Load() {
		f.NotReady = []error{errors.New("container runtime status check may not have completed yet")}
	}
	return f
}

func (s *source) Images(context.Context) ([]*runtimeapi.Image, error) { return nil, nil }

// TestAgainstAPIServer: the Node is registered, turns Ready as soon as the
// facts say so, its Lease is renewed with the Node as owner, and a deleted
// Node is registered again.
func TestAgainstAPIServer(t *testing.T) {
	c := devcluster.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := &source{}
	node := thisnode.New(c.Admin, "node-a", apiclient.NewOutage(hclog.NewNullLogger(), "watching"))
	go node.Run(ctx)
	u := nodestatus.New(nodestatus.Options{Client: c.Admin, NodeName: "node-a", Node: node, Source: src,
		UpdateFrequency: 10 * time.Second, ReportFrequency: 5 * time.Minute,
		Outage: apiclient.NewOutage(hclog.NewNullLogger(), "posting the node's status"), Logger: hclog.NewNullLogger()})
	lease := nodelease.New(nodelease.Options{Client: c.Admin, NodeName: "node-a", DurationSeconds: 4, Node: u.Node})
	go u.Run(ctx)
	go func() { <-u.Registered(); lease.Run(ctx) }()

	nodes := c.Admin.CoreV1().Nodes()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	ready := func() (*v1.Node, bool) {
		n, err := nodes.Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return n, c.Status == v1.ConditionTrue
			}
		}
		return n, false
	}
	waitFor("registration", func() bool { n, _ := ready(); return n != nil })
	src.ready.Store(true)
	start := time.Now()
	waitFor("Ready", func() bool { _, ok := ready(); return ok })
	// Well within one update period: the 100 ms readiness check posted it.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Ready posted %v after the node was ready", d)
	}

	leases := c.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease)
	var renewed time.Time
	waitFor("a Lease owned by the Node", func() bool {
		l, err := leases.Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil || len(l.OwnerReferences) != 1 || l.Spec.RenewTime == nil {
			return false
		}
		renewed = l.Spec.RenewTime.Time
		return l.OwnerReferences[0].Kind == "Node"
	})
	waitFor("the Lease renewed", func() bool {
		l, err := leases.Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.Time.After(renewed)
	})

	first, _ := ready()
	if err := nodes.Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("registration again", func() bool { n, ok := ready(); return ok && n.UID != first.UID })
}
