package eviction

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/memnotify"
	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/podview"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/plugins/eviction/priority"
	"github.com/microlet/microlet/plugins/eviction/psi"
	"github.com/microlet/microlet/plugins/eviction/strategy"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
	"github.com/microlet/microlet/sdk/evictionengine/kubelet"
	"github.com/microlet/microlet/sdk/sdktest"
)

const (
	Mi = int64(1) << 20
	Gi = int64(1) << 30
)

var epoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// pod is a pushed pod (not critical) with one container; requests and
// limits are memory quantities ("" for none).
func pod(name string, request, limit string) *v1.Pod {
	c := v1.Container{Name: "app", Image: "localhost/busybox:1"}
	if request != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}
	}
	if limit != "" {
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(limit)}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			Annotations: map[string]string{podspec.ConfigSourceAnnotationKey: podsource.PushSource}},
		Spec: v1.PodSpec{Containers: []v1.Container{c}},
	}
}

// staticPod is a pod from a manifest file: critical.
func staticPod(name string) *v1.Pod {
	p := pod(name, "", "")
	p.Annotations[podspec.ConfigSourceAnnotationKey] = podsource.FileSource
	return p
}

// kill is one KillPod call.
type kill struct {
	uid    types.UID
	grace  int64
	status v1.PodStatus
}

// fakePods are the active pods; KillPod records the kill and the status the
// eviction gives, and the pod leaves the active ones.
type fakePods struct {
	mu     sync.Mutex
	active []*v1.Pod
	kills  []kill
}

func (f *fakePods) ActivePods() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.active)
}

func (f *fakePods) PodView(pod *v1.Pod) *typesv1.Pod {
	return podview.Pod(pod, &pod.Status, nil, podview.Extra{QOSClass: string(status.GetPodQOS(pod)), CgroupParent: "/kubepods/pod" + string(pod.UID)}, nil)
}

func (f *fakePods) PodCgroup(uid types.UID) (string, bool) {
	return "/kubepods/pod" + string(uid), true
}

func (f *fakePods) KillPod(pod *v1.Pod, evict bool, grace *int64, statusFn podworkers.PodStatusFunc) error {
	if !evict || grace == nil {
		return fmt.Errorf("KillPod(evict=%t, grace=%v), want an eviction with a grace period", evict, grace)
	}
	var st v1.PodStatus
	statusFn(&st)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills = append(f.kills, kill{uid: pod.UID, grace: *grace, status: st})
	f.active = slices.DeleteFunc(f.active, func(p *v1.Pod) bool { return p.UID == pod.UID })
	return nil
}

func (f *fakePods) PodCleanedUp(types.UID) bool { return true }

func (f *fakePods) killed() []kill {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Pods of one cycle are killed concurrently: order them.
	out := slices.Clone(f.kills)
	slices.SortFunc(out, func(a, b kill) int {
		if a.uid < b.uid {
			return -1
		}
		return 1
	})
	return out
}

func (f *fakePods) killedUIDs() []types.UID {
	var out []types.UID
	for _, k := range f.killed() {
		out = append(out, k.uid)
	}
	return out
}

// fakeStats hands out samples in turn, repeating the last; err makes every
// call fail (the stats plugin down).
type fakeStats struct {
	mu      sync.Mutex
	samples []*stats.Sample
	err     error
	calls   int
}

func (f *fakeStats) Sample(context.Context, bool) (*stats.Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	s := f.samples[0]
	if len(f.samples) > 1 {
		f.samples = f.samples[1:]
	}
	// A copy, as every answer of the plugin is a new message: the manager
	// adds to what it gets (missing pods, pressure).
	out := &stats.Sample{Node: proto.Clone(s.Node).(*typesv1.NodeStats), Pods: make([]*typesv1.PodStats, len(s.Pods))}
	for i, ps := range s.Pods {
		out.Pods[i] = proto.Clone(ps).(*typesv1.PodStats)
	}
	return out, nil
}

// fakeReclaimer records reclaim calls.
type fakeReclaimer struct {
	calls []string
	freed uint64
	err   error
}

func (f *fakeReclaimer) CollectContainers(_ context.Context, removeAll bool) error {
	f.calls = append(f.calls, fmt.Sprintf("containers remove_all=%t", removeAll))
	return f.err
}

func (f *fakeReclaimer) CollectImages(_ context.Context, bytesToFree uint64) (uint64, error) {
	f.calls = append(f.calls, fmt.Sprintf("images bytes_to_free=%d", bytesToFree))
	return f.freed, f.err
}

// fakeNotifier records what is armed and says what is exceeded.
type fakeNotifier struct {
	events chan memnotify.Event
	armed  [][]memnotify.Threshold

	mu       sync.Mutex
	exceeded []string
}

func (f *fakeNotifier) Exceeded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.exceeded)
}

func (f *fakeNotifier) setExceeded(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exceeded = keys
}

func (f *fakeNotifier) Events() <-chan memnotify.Event { return f.events }
func (f *fakeNotifier) Arm(t []memnotify.Threshold) error {
	f.armed = append(f.armed, t)
	return nil
}
func (f *fakeNotifier) Close() error { return nil }

// clientPlugin reaches a plugin served in the test.
type clientPlugin struct {
	name         string
	client       evictionv1.EvictionServiceClient
	capabilities []string
}

func (p *clientPlugin) Call(ctx context.Context, fn func(context.Context, evictionConn) error) error {
	return fn(ctx, evictionConn{Client: p.client, Capabilities: p.capabilities})
}

func (p *clientPlugin) Name() string { return p.name }

// servePlugin serves a real eviction strategy in the test with config.
func servePlugin(t *testing.T, name string, config map[string]any) *clientPlugin {
	t.Helper()
	info := sdk.Info{Kind: sdk.KindEviction, Name: name, Version: "test"}
	var h *sdktest.Harness
	switch name {
	case "kubelet":
		h = sdktest.InProcess[evictionengine.Config](t, info, strategy.New(kubelet.New))
	case "priority":
		h = sdktest.InProcess[priority.Config](t, info, strategy.New(priority.New))
	case "psi":
		h = sdktest.InProcess[psi.Config](t, info, strategy.New(psi.New))
	default:
		t.Fatalf("no strategy %q", name)
	}
	if err := h.Configure(config); err != nil {
		t.Fatalf("configuring the %s strategy: %v", name, err)
	}
	return &clientPlugin{name: name, client: h.Eviction(), capabilities: h.Capabilities()}
}

// scripted is an eviction plugin that answers every Synchronize with resp,
// or fails with err.
type scripted struct {
	resp *evictionv1.SynchronizeResponse
	err  error
}

func (s *scripted) Configure(context.Context, *struct{}, *sdk.Host) error { return nil }
func (s *scripted) Synchronize(context.Context, *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	return s.resp, s.err
}

func serveScripted(t *testing.T, s *scripted) *clientPlugin {
	t.Helper()
	h := sdktest.InProcess[struct{}](t, sdk.Info{Kind: sdk.KindEviction, Name: "scripted", Version: "test"}, s)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	return &clientPlugin{name: "scripted", client: h.Eviction(), capabilities: h.Capabilities()}
}

func scriptedPlugin(t *testing.T, resp *evictionv1.SynchronizeResponse) *clientPlugin {
	return serveScripted(t, &scripted{resp: resp})
}

func failingPlugin(t *testing.T, err error) *clientPlugin {
	return serveScripted(t, &scripted{err: err})
}

// switchable is a plugin slot whose process comes and goes.
type switchable struct {
	mu   sync.Mutex
	p    Plugin
	down error
}

func (s *switchable) set(p Plugin, down error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p, s.down = p, down
}

func (s *switchable) Call(ctx context.Context, fn func(context.Context, evictionConn) error) error {
	s.mu.Lock()
	p, down := s.p, s.down
	s.mu.Unlock()
	if down != nil {
		return down
	}
	return p.Call(ctx, fn)
}

func (s *switchable) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return ""
	}
	return s.p.Name()
}

// sample is node stats with memory working set ws of 8Gi, nodefs free
// bytes of 100Gi, and each pod's usage: its working set, and as much in its
// container's writable layer.
func sample(at time.Time, ws, nodefsFree int64, pods map[*v1.Pod]int64) *stats.Sample {
	now := timestamppb.New(at)
	s := &stats.Sample{Node: &typesv1.NodeStats{
		Memory: &typesv1.MemoryStats{Time: now, WorkingSetBytes: u64(ws), UsageBytes: u64(ws)},
		Fs:     &typesv1.FsStats{Time: now, CapacityBytes: u64(100 * Gi), AvailableBytes: u64(nodefsFree), Inodes: u64(1e6), InodesFree: u64(5e5)},
	}}
	for p, podWS := range pods {
		s.Pods = append(s.Pods, &typesv1.PodStats{
			PodRef:     &typesv1.PodReference{Name: p.Name, Namespace: p.Namespace, Uid: string(p.UID)},
			Memory:     &typesv1.MemoryStats{Time: now, WorkingSetBytes: u64(podWS), UsageBytes: u64(podWS)},
			Containers: []*typesv1.ContainerStats{{Name: "app", Rootfs: &typesv1.FsStats{Time: now, UsedBytes: u64(podWS)}}},
		})
	}
	slices.SortFunc(s.Pods, func(a, b *typesv1.PodStats) int {
		if a.PodRef.Uid < b.PodRef.Uid {
			return -1
		}
		return 1
	})
	return s
}

func u64(v int64) *uint64 { u := uint64(v); return &u }

// nodeView is an 8Gi node with 7Gi allocatable and 100Gi of disk.
func nodeView() *typesv1.Node {
	mem, alloc, disk := 8*Gi, 7*Gi, 100*Gi
	return &typesv1.Node{Name: "node", Capacity: &typesv1.ResourceList{MemoryBytes: &mem, EphemeralStorageBytes: &disk},
		Allocatable: &typesv1.ResourceList{MemoryBytes: &alloc}}
}

// fixture is a manager over fakes, its cycles driven by the test.
type fixture struct {
	m         *Manager
	pods      *fakePods
	stats     *fakeStats
	reclaimer *fakeReclaimer
	notifier  *fakeNotifier
	registry  *prometheus.Registry
	clock     *clocktesting.FakeClock
}

// run runs the manager's loop until the test ends, and waits for it to
// return then.
func (f *fixture) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitCycles waits up to 30 s for the manager's loop to count n cycles of
// strategy and trigger, stepping the fake clock by step between looks (0:
// not at all), and fails the test with why it waited.
func (f *fixture) waitCycles(t *testing.T, strategy, trigger string, n float64, step time.Duration, why string) {
	t.Helper()
	cycles := f.m.metrics.cycles.WithLabelValues(strategy, trigger)
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(cycles) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%v %s cycles within 30s %s, want %v", testutil.ToFloat64(cycles), trigger, why, n)
		}
		if step > 0 {
			f.clock.Step(step)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newFixture(t *testing.T, plugin Plugin, maxPods int, pods ...*v1.Pod) *fixture {
	t.Helper()
	f := &fixture{
		pods:      &fakePods{active: pods},
		stats:     &fakeStats{},
		reclaimer: &fakeReclaimer{},
		notifier:  &fakeNotifier{events: make(chan memnotify.Event, 1)},
		registry:  prometheus.NewRegistry(),
		clock:     clocktesting.NewFakeClock(epoch),
	}
	var err error
	f.m, err = New(Options{
		Plugin: plugin, Stats: f.stats, Pods: f.pods, Reclaimer: f.reclaimer, Notifier: f.notifier,
		Node: func() *typesv1.Node {
			n := nodeView()
			n.Conditions = f.m.Conditions()
			return n
		},
		MaxPodsPerCycle: maxPods, Registerer: f.registry, Clock: f.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// cycle runs one periodic cycle at the clock's time.
func (f *fixture) cycle() { f.m.cycle(context.Background(), evictionv1.Trigger_TRIGGER_PERIODIC) }

func (f *fixture) cycles(strategy string) float64 {
	return testutil.ToFloat64(f.m.metrics.cycles.WithLabelValues(strategy, "periodic"))
}

func (f *fixture) evictions(signal string) float64 {
	return testutil.ToFloat64(f.m.metrics.evictions.WithLabelValues(signal))
}

// conditionStatus is the status of each pressure condition, "" if absent.
func conditionStatus(conditions []*typesv1.NodeCondition) map[string]string {
	out := map[string]string{}
	for _, c := range conditions {
		out[c.GetType()] = c.GetStatus()
	}
	return out
}
