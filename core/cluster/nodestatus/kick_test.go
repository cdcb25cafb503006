package nodestatus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/cluster/thisnode"
)

// lockedSource is fakeSource safe to change while Run reads it.
type lockedSource struct {
	fakeSource
	mu sync.Mutex
}

func (s *lockedSource) Facts() Facts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.facts
}

// TestUpdaterSyncsOnKick: a kick (the node started shutting down) posts
// the status at once, not at the next period: the clock never moves here.
func TestUpdaterSyncsOnKick(t *testing.T) {
	client := fake.NewClientset()
	source := &lockedSource{fakeSource: fakeSource{facts: readyFacts()}}
	kick := make(chan struct{}, 1)
	u := New(Options{
		Client: client, NodeName: "node-a", Node: thisnode.New(client, "node-a", apiclient.NewOutage(hclog.NewNullLogger(), "watching")), Source: source,
		UpdateFrequency: 10 * time.Second, ReportFrequency: 5 * time.Minute, Kick: kick,
		Outage: apiclient.NewOutage(hclog.NewNullLogger(), "posting the node's status"),
		Logger: hclog.NewNullLogger(), Clock: clocktesting.NewFakeClock(t0),
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); u.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-u.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("the node was not registered")
	}

	source.mu.Lock()
	source.facts.NotReady = []error{errors.New("node is shutting down")}
	source.mu.Unlock()
	kick <- struct{}{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
		if err == nil {
			if c, _ := findCondition(n, v1.NodeReady); c.Status == v1.ConditionFalse && c.Reason == "KubeletNotReady" && c.Message == "node is shutting down" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kick posted no NotReady status in 10s (node %v, error %v)", n.Status.Conditions, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
