package syncloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/pleg"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/runtime/container"
)

// fakeRuntime is a container runtime in memory: SyncPod starts a pod's
// missing containers (unless told to answer something else), KillPod stops
// everything, and the test makes containers exit.
type fakeRuntime struct {
	mu   sync.Mutex
	pods map[types.UID]*container.PodStatus
	// syncResult, if set, is SyncPod's answer instead of starting anything.
	syncResult func(pod *v1.Pod) *podruntime.SyncResult
	syncs      []*v1.Pod   // the pods SyncPod was called with, in order
	kills      []types.UID // pods KillPod was called for (orphans included)
	cleanups   []types.UID
	deleted    []string // containers DeleteContainer removed
	nextID     int
}

var _ Runtime = (*fakeRuntime)(nil)

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{pods: map[types.UID]*container.PodStatus{}}
}

// run puts a pod on the runtime as a previous run of the core left it: a
// ready sandbox and the named containers running.
func (r *fakeRuntime) run(uid types.UID, name string, containers ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &container.PodStatus{UID: uid, Name: name, Namespace: "default"}
	st.Sandboxes = []*container.SandboxStatus{{ID: r.id(), State: container.SandboxReady, CreatedAt: time.Now(), IPs: []string{"10.88.0.2"}}}
	for _, c := range containers {
		st.Containers = append(st.Containers, r.runningContainer(st.Sandboxes[0].ID, c))
	}
	r.pods[uid] = st
}

// exit ends a running container with code.
func (r *fakeRuntime) exit(uid types.UID, name string, code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.pods[uid].Containers {
		if c.Name == name && c.State == container.StateRunning {
			c.State, c.ExitCode, c.FinishedAt = container.StateExited, code, time.Now()
		}
	}
}

// stopAll leaves only dead leftovers of a pod: exited containers and a
// sandbox that is not ready.
func (r *fakeRuntime) stopAll(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop(r.pods[uid])
}

func (r *fakeRuntime) stop(st *container.PodStatus) {
	for _, c := range st.Containers {
		if c.State == container.StateRunning {
			c.State, c.ExitCode, c.FinishedAt = container.StateExited, 137, time.Now()
		}
	}
	for _, sb := range st.Sandboxes {
		sb.State = container.SandboxNotReady
	}
}

func (r *fakeRuntime) id() string {
	r.nextID++
	return fmt.Sprintf("id-%d", r.nextID)
}

func (r *fakeRuntime) runningContainer(sandbox, name string) *container.ContainerStatus {
	now := time.Now()
	return &container.ContainerStatus{ID: r.id(), Name: name, SandboxID: sandbox, State: container.StateRunning,
		CreatedAt: now, StartedAt: now, Image: "busybox", ImageRef: "busybox@sha256:0", ImageID: "sha256:0"}
}

func (r *fakeRuntime) ListPods(context.Context) ([]*container.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*container.Pod
	for _, st := range r.pods {
		p := &container.Pod{UID: st.UID, Name: st.Name, Namespace: st.Namespace}
		for _, sb := range st.Sandboxes {
			p.Sandboxes = append(p.Sandboxes, &container.Sandbox{ID: sb.ID, State: sb.State, CreatedAt: sb.CreatedAt})
		}
		for _, c := range st.Containers {
			p.Containers = append(p.Containers, &container.Container{ID: c.ID, Name: c.Name, SandboxID: c.SandboxID, State: c.State, CreatedAt: c.CreatedAt})
		}
		out = append(out, p)
	}
	return out, nil
}

func (r *fakeRuntime) GetPodStatus(_ context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copyOf(uid, name, namespace), nil
}

// ListedPodStatus is the pod's whole status, dated at the listing: the
// loop's tests run no PLEG, which alone calls it.
func (r *fakeRuntime) ListedPodStatus(_ context.Context, listed *container.Pod, listedAt time.Time) (*container.PodStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.copyOf(listed.UID, listed.Name, listed.Namespace)
	s.Timestamp = listedAt
	return s, nil
}

// copyOf is a deep copy of a pod's status; an empty one when the runtime
// has nothing of it.
func (r *fakeRuntime) copyOf(uid types.UID, name, namespace string) *container.PodStatus {
	st, ok := r.pods[uid]
	if !ok {
		return &container.PodStatus{UID: uid, Name: name, Namespace: namespace, Timestamp: time.Now()}
	}
	out := *st
	out.Sandboxes, out.Containers = nil, nil
	for _, sb := range st.Sandboxes {
		c := *sb
		out.Sandboxes = append(out.Sandboxes, &c)
	}
	for _, cs := range st.Containers {
		c := *cs
		out.Containers = append(out.Containers, &c)
	}
	out.Timestamp = time.Now()
	return &out
}

func (r *fakeRuntime) SyncPod(_ context.Context, pod *v1.Pod, _ *container.PodStatus, _ podruntime.ProbeResults) *podruntime.SyncResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs = append(r.syncs, pod)
	if r.syncResult != nil {
		return r.syncResult(pod)
	}
	st, ok := r.pods[pod.UID]
	if !ok {
		st = &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
		st.Sandboxes = []*container.SandboxStatus{{ID: r.id(), State: container.SandboxReady, CreatedAt: time.Now(), IPs: []string{"10.88.0.2"}}}
		r.pods[pod.UID] = st
	}
	result := &podruntime.SyncResult{}
	for _, c := range pod.Spec.Containers {
		if st.Container(c.Name) == nil {
			st.Containers = append([]*container.ContainerStatus{r.runningContainer(st.Sandboxes[0].ID, c.Name)}, st.Containers...)
			result.Steps = append(result.Steps, podruntime.StepResult{Action: podruntime.ActionStartContainer, Target: c.Name})
		}
	}
	return result
}

func (r *fakeRuntime) KillPod(_ context.Context, _ *v1.Pod, runningPod *container.Pod, _ *int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if runningPod == nil {
		return nil
	}
	r.kills = append(r.kills, runningPod.UID)
	if st, ok := r.pods[runningPod.UID]; ok {
		r.stop(st)
	}
	return nil
}

func (r *fakeRuntime) CleanupPod(_ context.Context, uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.pods[uid]; ok && len(st.RunningContainers()) > 0 {
		return errors.New("the pod still runs")
	}
	r.cleanups = append(r.cleanups, uid)
	return nil
}

func (r *fakeRuntime) DeleteContainer(_ context.Context, _, _, _, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.pods {
		st.Containers = slices.DeleteFunc(st.Containers, func(s *container.ContainerStatus) bool { return s.ID == id })
	}
	r.deleted = append(r.deleted, id)
	return nil
}

// deletedContainers are the containers DeleteContainer removed, in order.
func (r *fakeRuntime) deletedContainers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deleted)
}

// synced returns the pods SyncPod was called with for uid, in order.
func (r *fakeRuntime) synced(uid types.UID) []*v1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*v1.Pod
	for _, p := range r.syncs {
		if p.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// killed says whether KillPod was called for uid.
func (r *fakeRuntime) killed(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.kills, uid)
}

// cleanedUp says whether CleanupPod was called for uid.
func (r *fakeRuntime) cleanedUp(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.cleanups, uid)
}

// fakeEvents is a PLEG that never reports anything.
type fakeEvents struct{}

func (fakeEvents) Watch() <-chan *pleg.PodLifecycleEvent { return nil }
func (fakeEvents) Healthy() (bool, error)                { return true, nil }
func (fakeEvents) RelistSoon()                           {}

// fakeHealth says the runtime is ready; the network as the test sets it.
type fakeHealth struct {
	mu         sync.Mutex
	networkErr error
}

func (h *fakeHealth) RuntimeErr() error { return nil }

func (h *fakeHealth) NetworkErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.networkErr
}

func (h *fakeHealth) setNetworkErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.networkErr = err
}

// fakeAdmitter answers every admission with the verdict the test sets.
type fakeAdmitter struct {
	mu      sync.Mutex
	verdict Admission
	asked   []types.UID
}

func (a *fakeAdmitter) Name() string { return "fake" }

func (a *fakeAdmitter) Admit(_ context.Context, pod *v1.Pod, _ []*v1.Pod) Admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, pod.UID)
	return a.verdict
}

func (a *fakeAdmitter) set(v Admission) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.verdict = v
}

// fakeSource sends one empty set, so that podconfig counts it as read.
type fakeSource struct{ name string }

func (s fakeSource) Name() string { return s.name }

func (s fakeSource) Run(ctx context.Context, out chan<- podsource.Update) {
	select {
	case out <- podsource.Update{Source: s.name, Op: podsource.OpSet}:
	case <-ctx.Done():
	}
	<-ctx.Done()
}
