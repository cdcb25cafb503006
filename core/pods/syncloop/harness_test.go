package syncloop

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/status"
)

// testSource is the one pod source of a harness.
const testSource = "file"

// harness is a loop on fakes. The test plays the loop's goroutine: it
// hands updates to handleUpdate and runs housekeeping itself, while the
// real pod workers sync pods through the loop's Syncer side.
type harness struct {
	t        *testing.T
	ctx      context.Context
	loop     *Loop
	runtime  *fakeRuntime
	health   *fakeHealth
	admitter *fakeAdmitter
	statuses *status.Manager
	reasons  *status.ReasonCache
	// created stamps the pods newPod makes, one second apart, oldest first.
	created time.Time
}

func newHarness(t *testing.T, maxPods int) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, runtime: newFakeRuntime(), health: &fakeHealth{},
		admitter: &fakeAdmitter{verdict: Admission{Admit: true}}, statuses: status.NewManager(hclog.NewNullLogger(), nil),
		reasons: status.NewReasonCache(), created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}

	// podconfig reads its source as it would at start; the updates it
	// makes of that are not needed, the test sends its own.
	config, err := podconfig.New(hclog.NewNullLogger(), fakeSource{name: testSource})
	if err != nil {
		t.Fatal(err)
	}
	go config.Run(ctx)
	go func() {
		for range config.Updates() {
		}
	}()
	eventually(t, "podconfig reads its source", func() bool { return config.SeenAllSources(sets.New(testSource)) })

	cache := podcache.New()
	go h.relist(ctx, cache)
	h.loop, err = New(Options{
		Config:    config,
		Runtime:   h.runtime,
		Events:    fakeEvents{},
		Cache:     cache,
		Statuses:  h.statuses,
		Reasons:   h.reasons,
		Generator: &status.Generator{RuntimeName: "fake", NodeIPs: []string{"10.0.0.1"}, Reasons: h.reasons},
		Health:    h.health,
		Admitters: []Admitter{h.admitter},
		MaxPods:   maxPods,
	})
	if err != nil {
		t.Fatal(err)
	}
	go h.loop.deadContainers.run(ctx)
	return h
}

// relist plays PLEG: it keeps the cache as fresh as the runtime, so that
// pod workers waiting for a newer status get one.
func (h *harness) relist(ctx context.Context, cache *podcache.Cache) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		pods, _ := h.runtime.ListPods(ctx)
		for _, p := range pods {
			st, _ := h.runtime.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
			cache.Set(p.UID, st, nil, now)
		}
		cache.UpdateTime(now)
	}
}

// newPod is a static pod from the harness's source, created after every
// pod made before it, with one container "app".
func (h *harness) newPod(name string, policy v1.RestartPolicy) *v1.Pod {
	h.created = h.created.Add(time.Second)
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(h.created),
			Annotations:       map[string]string{podspec.ConfigSourceAnnotationKey: testSource},
		},
		Spec: v1.PodSpec{
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "app", Image: "busybox"}},
		},
	}
}

// send hands the loop one update from the harness's source.
func (h *harness) send(op podconfig.Op, pods ...*v1.Pod) {
	h.loop.handleUpdate(h.ctx, podconfig.PodUpdate{Op: op, Source: testSource, Pods: pods})
}

// status is the pod's status as the status manager holds it.
func (h *harness) status(pod *v1.Pod) (v1.PodStatus, bool) {
	return h.statuses.GetPodStatus(pod.UID)
}

func (h *harness) waitSynced(pod *v1.Pod) {
	h.t.Helper()
	eventually(h.t, "the runtime syncs "+pod.Name, func() bool { return len(h.runtime.synced(pod.UID)) > 0 })
}

// waitPhase syncs the pod, as PLEG's events would, until its status has
// the phase.
func (h *harness) waitPhase(pod *v1.Pod, phase v1.PodPhase) {
	h.t.Helper()
	eventually(h.t, pod.Name+" reaches phase "+string(phase), func() bool {
		h.loop.syncKnown(pod.UID)
		st, ok := h.status(pod)
		return ok && st.Phase == phase
	})
}

// killRequested says whether the loop asked the workers to stop the pod,
// which they then do on their own goroutines.
func (h *harness) killRequested(uid types.UID) bool {
	return h.loop.workers.IsPodTerminationRequested(uid) || h.runtime.killed(uid)
}

// activeNames are the names of the loop's active pods.
func (h *harness) activeNames() []string {
	var names []string
	for _, p := range h.loop.ActivePods() {
		names = append(names, p.Name)
	}
	return names
}

// eventually polls cond until it holds, failing the test after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
