package status

import (
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// VersionedPodStatus is a pod's latest status with its version, which
// grows by one with every change, so that a consumer (the API server
// status sync, later) can tell what it has not seen yet.
type VersionedPodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	Version   uint64
	// PodIsFinished: the status was set once the pod had finished on the
	// node (TerminatePod), so it is final.
	PodIsFinished bool
	Status        v1.PodStatus
}

// Manager keeps the latest status of every pod, as upstream's status
// manager keeps it before syncing it to the API server: versioned,
// normalised, with condition transition times and a start time, and with
// illegal transitions refused (a container may not leave terminated unless
// the restart policy allows it; a pod may not leave Succeeded or Failed).
// Statuses tells readers what it holds and when that changes. It is safe
// for concurrent use.
type Manager struct {
	log   hclog.Logger
	clock clock.PassiveClock

	mu       sync.Mutex
	statuses map[types.UID]*entry
	// changed is closed, and replaced, on every change.
	changed chan struct{}
}

type entry struct {
	VersionedPodStatus
	// pod is the pod the status was last set for; readiness changes need
	// its spec.
	pod *v1.Pod
}

// NewManager makes an empty manager; log nil discards messages, clk nil is
// the real clock.
func NewManager(log hclog.Logger, clk clock.PassiveClock) *Manager {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{log: log, clock: clk, statuses: map[types.UID]*entry{}, changed: make(chan struct{})}
}

// GetPodStatus returns a copy of the pod's latest status.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.statuses[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.Status.DeepCopy(), true
}

// Statuses returns a copy of every pod's latest status, ordered by
// namespace and name, and a channel that is closed at the next change:
// read, act, wait on the channel, read again.
func (m *Manager) Statuses() ([]VersionedPodStatus, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]VersionedPodStatus, 0, len(m.statuses))
	for _, e := range m.statuses {
		v := e.VersionedPodStatus
		v.Status = *e.Status.DeepCopy()
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b VersionedPodStatus) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, m.changed
}

// SetPodStatus records a pod's new status: a generated one, or one the
// node agent decides itself (see RejectedStatus and EvictedStatusFunc).
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	status = *status.DeepCopy()
	// PodObservedGenerationTracking is on by default from 1.34.
	status.ObservedGeneration = pod.Generation
	// A pod being deleted may need its status rewritten even unchanged.
	m.update(pod, status, pod.DeletionTimestamp != nil, false)
}

// SetContainerReadiness records a readiness probe's new verdict on a
// container instance (its CRI ID) and regenerates the Ready and
// ContainersReady conditions, as upstream.
func (m *Manager) SetContainerReadiness(uid types.UID, containerID string, ready bool) {
	m.setContainer(uid, containerID, "readiness", func(s *v1.ContainerStatus) bool {
		if s.Ready == ready {
			return false
		}
		s.Ready = ready
		return true
	}, true)
}

// SetContainerStartup records a startup probe's new verdict on a container
// instance (its CRI ID), as upstream.
func (m *Manager) SetContainerStartup(uid types.UID, containerID string, started bool) {
	m.setContainer(uid, containerID, "startup", func(s *v1.ContainerStatus) bool {
		if s.Started != nil && *s.Started == started {
			return false
		}
		s.Started = &started
		return true
	}, false)
}

func (m *Manager) setContainer(uid types.UID, containerID, what string, change func(*v1.ContainerStatus) bool, readiness bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.statuses[uid]
	if !ok {
		m.log.Debug("container "+what+" changed before the pod's status was set", "uid", uid, "container_id", containerID)
		return
	}
	status := *e.Status.DeepCopy()
	s := findContainerStatus(&status, containerID)
	if s == nil {
		m.log.Debug("container "+what+" changed for an unknown container", "pod", e.Namespace+"/"+e.Name, "container_id", containerID)
		return
	}
	if !change(s) {
		return
	}
	if readiness {
		all := append(append([]v1.ContainerStatus{}, status.InitContainerStatuses...), status.ContainerStatuses...)
		status.Conditions = replaceOrAppendCondition(status.Conditions, ptr(podReadyCondition(e.pod, status.Conditions, all, status.Phase)))
		status.Conditions = replaceOrAppendCondition(status.Conditions, ptr(containersReadyCondition(e.pod, all, status.Phase)))
	}
	m.update(e.pod, status, false, false)
}

func ptr[T any](v T) *T { return &v }

// findContainerStatus finds a container or init container status by the
// instance's CRI ID.
func findContainerStatus(status *v1.PodStatus, containerID string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses} {
		for i := range list {
			if list[i].ContainerID != "" && runtimeContainerID(list[i].ContainerID) == containerID {
				return &list[i]
			}
		}
	}
	return nil
}

// RemoveOrphanedStatuses forgets the pods not in podUIDs.
func (m *Manager) RemoveOrphanedStatuses(podUIDs map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	removed := false
	for uid := range m.statuses {
		if !podUIDs[uid] {
			m.log.Trace("removing a pod's status", "uid", uid)
			delete(m.statuses, uid)
			removed = true
		}
	}
	if removed {
		m.notify()
	}
}

// update is upstream's updateStatusInternal. Call it with mu held.
func (m *Manager) update(pod *v1.Pod, status v1.PodStatus, forceUpdate, podIsFinished bool) {
	log := m.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	cached, isCached := m.statuses[pod.UID]
	var old v1.PodStatus
	switch {
	case isCached:
		old = cached.Status
		if cached.PodIsFinished && !podIsFinished && !IsStaticPod(pod) {
			log.Info("status update says the pod is not finished, but it was; keeping it finished")
			podIsFinished = true
		}
	default:
		old = pod.Status
	}

	if err := checkContainerStateTransition(&old, &status, &pod.Spec); err != nil {
		log.Error("status update aborted", "error", err)
		return
	}
	if IsTerminalPhase(old.Phase) && status.Phase != old.Phase {
		log.Error("status update attempted an illegal phase transition; keeping the terminal phase", "phase", old.Phase, "attempted", status.Phase)
		status.Phase, status.Reason, status.Message = old.Phase, old.Reason, old.Message
	}

	now := metav1.NewTime(m.clock.Now())
	for _, t := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady, v1.PodInitialized, v1.PodReadyToStartContainers, v1.PodScheduled, v1.DisruptionTarget} {
		updateLastTransitionTime(&status, &old, t, now)
	}
	if old.StartTime != nil && !old.StartTime.IsZero() {
		status.StartTime = old.StartTime
	} else if status.StartTime.IsZero() {
		status.StartTime = &now
	}
	if old.ObservedGeneration > status.ObservedGeneration {
		status.ObservedGeneration = old.ObservedGeneration
	}
	normalizeStatus(pod, &status)

	if isCached && isPodStatusByKubeletEqual(&cached.Status, &status) && !forceUpdate {
		log.Trace("ignoring an unchanged status")
		return
	}
	next := &entry{
		VersionedPodStatus: VersionedPodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, PodIsFinished: podIsFinished, Status: status},
		pod:                pod,
	}
	if isCached {
		next.Version = cached.Version + 1
	} else {
		next.Version = 1
	}
	m.statuses[pod.UID] = next
	m.notify()
}

// notify wakes the readers of Statuses. Call it with mu held.
func (m *Manager) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// updateLastTransitionTime sets a condition's transition time: now if its
// status changed, the old time otherwise.
func updateLastTransitionTime(status, old *v1.PodStatus, t v1.PodConditionType, now metav1.Time) {
	c := findCondition(status.Conditions, t)
	if c == nil {
		return
	}
	c.LastTransitionTime = now
	if prev := findCondition(old.Conditions, t); prev != nil && prev.Status == c.Status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
}

// isPodStatusByKubeletEqual is upstream's: the statuses are equal apart
// from conditions the node agent does not own, and from the transition
// times of those it owns.
func isPodStatusByKubeletEqual(old, status *v1.PodStatus) bool {
	owned := func(conditions []v1.PodCondition) map[v1.PodConditionType]v1.PodCondition {
		out := map[v1.PodConditionType]v1.PodCondition{}
		for _, c := range conditions {
			if IsConditionByKubelet(c.Type) || IsConditionSharedByKubelet(c.Type) {
				out[c.Type] = c
			}
		}
		return out
	}
	oldConditions, newConditions := owned(old.Conditions), owned(status.Conditions)
	if len(oldConditions) != len(newConditions) {
		return false
	}
	for t, c := range newConditions {
		o, ok := oldConditions[t]
		if !ok || o.Status != c.Status || o.Message != c.Message || o.Reason != c.Reason {
			return false
		}
	}
	oldCopy := old.DeepCopy()
	oldCopy.Conditions = status.Conditions
	return apiequality.Semantic.DeepEqual(oldCopy, status)
}
