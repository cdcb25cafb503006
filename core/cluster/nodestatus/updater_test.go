package nodestatus

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/cluster/thisnode"
)

type fakeSource struct{ facts Facts }

func (s *fakeSource) Facts() Facts { return s.facts }
func (s *fakeSource) Images(context.Context) ([]*runtimeapi.Image, error) {
	return []*runtimeapi.Image{{Id: "a", Size: 10, RepoTags: []string{"pause:3.10"}}}, nil
}

type updaterFixture struct {
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	source *fakeSource
	u      *Updater
	events []string
}

func newFixture(t *testing.T, objects ...*v1.Node) *updaterFixture {
	f := &updaterFixture{client: fake.NewClientset(), clock: clocktesting.NewFakeClock(t0), source: &fakeSource{facts: readyFacts()}}
	for _, n := range objects {
		if err := f.client.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	f.u = New(Options{
		Client: f.client, NodeName: "node-a", Node: thisnode.New(f.client, "node-a", apiclient.NewOutage(hclog.NewNullLogger(), "watching")), Source: f.source,
		Registration:    Registration{Labels: map[string]string{"node.kubernetes.io/pool": "a"}},
		UpdateFrequency: 10 * time.Second, ReportFrequency: 5 * time.Minute,
		OnEvent: func(e Event) { f.events = append(f.events, e.Reason) },
		Outage:  apiclient.NewOutage(hclog.NewNullLogger(), "posting the node's status"),
		Logger:  hclog.NewNullLogger(), Clock: f.clock,
	})
	return f
}

// requests are the API requests since the last call, as "verb resource[/sub]".
func (f *updaterFixture) requests() []string {
	var out []string
	for _, a := range f.client.Actions() {
		r := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		out = append(out, r)
	}
	f.client.ClearActions()
	return out
}

func (f *updaterFixture) node(t *testing.T) *v1.Node {
	n, err := f.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()
	return n
}

func TestUpdaterRegistersAndPostsOnlyWhatChanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"create nodes"}, f.requests()); diff != "" {
		t.Errorf("registration requests (-want +got):\n%s", diff)
	}
	select {
	case <-f.u.Registered():
	default:
		t.Errorf("Registered not closed after registration")
	}
	n := f.node(t)
	if n.Labels["node.kubernetes.io/pool"] != "a" || len(n.Status.Images) != 1 {
		t.Errorf("registered node labels %v images %v", n.Labels, n.Status.Images)
	}
	if diff := cmp.Diff([]string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"}, f.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Unchanged: computed, not posted (the informer is not running here,
	// so the Node is read from the API server).
	f.clock.Step(10 * time.Second)
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"get nodes"}, f.requests()); diff != "" {
		t.Errorf("unchanged status requests (-want +got):\n%s", diff)
	}

	// Changed: posted at once, with its event.
	f.source.facts.NotReady = []error{errRuntimeDown}
	f.clock.Step(10 * time.Second)
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"get nodes", "patch nodes/status"}, f.requests()); diff != "" {
		t.Errorf("changed status requests (-want +got):\n%s", diff)
	}
	if c, _ := findCondition(f.node(t), v1.NodeReady); c.Status != v1.ConditionFalse || c.Message != errRuntimeDown.Error() {
		t.Errorf("Ready = %+v", c)
	}
	if got := f.events[len(f.events)-1]; got != "NodeNotReady" {
		t.Errorf("last event %s, want NodeNotReady", got)
	}

	// Unchanged past the report period (with its largest random delay).
	f.clock.Step(5*time.Minute/2*3 + time.Second)
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"get nodes", "patch nodes/status"}, f.requests()); diff != "" {
		t.Errorf("report period requests (-want +got):\n%s", diff)
	}
}

func TestUpdaterReconcilesAnExistingNode(t *testing.T) {
	existing, _ := InitialNode("node-a", Registration{}, readyFacts(), t0.Add(-time.Hour))
	existing.Labels["team"] = "x"
	delete(existing.Labels, v1.LabelHostname)
	setType(existing, v1.NodeReady, v1.ConditionUnknown, "NodeStatusUnknown")
	f := newFixture(t, existing)
	f.u.sync(context.Background())
	want := []string{"create nodes", "get nodes", "patch nodes/status", "get nodes", "patch nodes/status"}
	if diff := cmp.Diff(want, f.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	n := f.node(t)
	if n.Labels["team"] != "x" || n.Labels[v1.LabelHostname] != "node-a" {
		t.Errorf("labels %v", n.Labels)
	}
	if c, _ := findCondition(n, v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	if got := f.events[len(f.events)-1]; got != "NodeReady" {
		t.Errorf("last event %s, want NodeReady", got)
	}
}

func TestUpdaterRegistersADeletedNodeAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.u.sync(ctx)
	first := f.node(t)
	if err := f.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()
	f.clock.Step(10 * time.Second)
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"get nodes", "create nodes"}, f.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	again := f.node(t)
	if again.Labels[v1.LabelHostname] != "node-a" || again.Name != first.Name {
		t.Errorf("re-registered node %+v", again.ObjectMeta)
	}
}

func TestUpdaterRetriesRegistration(t *testing.T) {
	f := newFixture(t)
	var failures atomic.Int32
	f.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtimeObject, error) {
		if failures.Add(1) <= 2 {
			return true, nil, errServerDown
		}
		return false, nil, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.u.sync(context.Background())
	}()
	// Each retry waits on the clock: move it on until sync returns.
	for registered := false; !registered; {
		select {
		case <-done:
			registered = true
		case <-time.After(time.Millisecond):
			if f.clock.HasWaiters() {
				f.clock.Step(registerBackoffMax)
			}
		}
	}
	if n := failures.Load(); n != 3 {
		t.Errorf("%d create attempts, want 3", n)
	}
	if _, err := f.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{}); err != nil {
		t.Errorf("not registered after retries: %v", err)
	}
}

type runtimeObject = runtime.Object

var errServerDown = errors.New("connection refused")

// TestUpdaterLogsAnOutageOnce: while the API server refuses, the outage
// log warns once, and says when it ends; each period's failure is logged
// for debugging only.
func TestUpdaterLogsAnOutageOnce(t *testing.T) {
	f := newFixture(t)
	var out strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
	f.u.log, f.u.opts.Outage = log, apiclient.NewOutage(log, "posting the node's status")
	ctx := context.Background()
	f.u.sync(ctx)
	down := true
	f.client.PrependReactor("*", "nodes", func(k8stesting.Action) (bool, runtimeObject, error) {
		if down {
			return true, nil, errServerDown
		}
		return false, nil, nil
	})
	f.source.facts.MemoryPressure = true // a change to post
	for range 3 {
		f.clock.Step(10 * time.Second)
		f.u.sync(ctx)
	}
	down = false
	f.clock.Step(10 * time.Second)
	f.u.sync(ctx)
	if n := strings.Count(out.String(), "[WARN]"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "the API server is reachable again") {
		t.Errorf("the outage's end is not logged:\n%s", out.String())
	}
}

// TestUpdaterRestartKeepsAReadyNodeReady: after a restart, a Node that was
// Ready is not posted NotReady while the node's first checks complete.
func TestUpdaterRestartKeepsAReadyNodeReady(t *testing.T) {
	existing, _ := InitialNode("node-a", Registration{}, readyFacts(), t0.Add(-time.Hour))
	f := newFixture(t, existing)
	f.u.started = f.clock.Now()
	f.source.facts.NotReady = []error{errors.New("PLEG is not healthy: pleg has yet to be successful")}
	ctx := context.Background()
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"create nodes", "get nodes", "get nodes"}, f.requests()); diff != "" {
		t.Errorf("requests while starting (-want +got):\n%s", diff)
	}
	f.source.facts.NotReady = nil
	f.clock.Step(time.Second)
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"get nodes", "patch nodes/status"}, f.requests()); diff != "" {
		t.Errorf("requests once ready (-want +got):\n%s", diff)
	}
	if c, _ := findCondition(f.node(t), v1.NodeReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Errorf("Ready = %+v, want True since before the restart", c)
	}
	if len(f.events) != 0 {
		t.Errorf("events %v, want none", f.events)
	}

	// Not ready for a whole period after a start: posted.
	g := newFixture(t, existing)
	g.u.started = g.clock.Now()
	g.source.facts.NotReady = []error{errRuntimeDown}
	g.u.sync(ctx)
	g.clock.Step(10 * time.Second)
	g.u.sync(ctx)
	if c, _ := findCondition(g.node(t), v1.NodeReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready = %+v after a period not ready, want False", c)
	}
}

// TestUpdaterReportsACordon: a cordon seen at the next status computation
// is an event, even when the status itself is not posted.
func TestUpdaterReportsACordon(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.u.sync(ctx)
	node := f.node(t)
	node.Spec.Unschedulable = true
	if _, err := f.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.events = nil
	f.clock.Step(10 * time.Second)
	f.u.sync(ctx)
	f.clock.Step(10 * time.Second)
	f.u.sync(ctx)
	if diff := cmp.Diff([]string{"NodeNotSchedulable"}, f.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
