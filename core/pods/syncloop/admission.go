package syncloop

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pods/podruntime"
)

// Admission is one admitter's verdict on a new pod.
type Admission struct {
	Admit bool
	// Reason and Message explain a refusal in upstream's terms
	// ("OutOfcpu", "Node didn't have enough resource: cpu, ...").
	Reason  string
	Message string
	// Retry means "not now": the admitter cannot decide (its plugin is down)
	// and the pod waits, neither admitted nor rejected, until it can.
	Retry bool
}

// Admitter decides whether a new pod may run on the node, given the pods
// already admitted and not yet terminated.
type Admitter interface {
	Name() string
	Admit(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) Admission
}

// maxPodsAdmitter is the core's own limit on pods, which no plugin can lift:
// the node's capacity in pods (upstream's maxPods, reason OutOfpods).
type maxPodsAdmitter struct{ max int }

func (m maxPodsAdmitter) Name() string { return "max-pods" }

func (m maxPodsAdmitter) Admit(_ context.Context, _ *v1.Pod, admitted []*v1.Pod) Admission {
	if m.max > 0 && len(admitted) >= m.max {
		return Admission{Reason: "OutOfpods", Message: fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(admitted), m.max)}
	}
	return Admission{Admit: true}
}

// logsDirAdmitter refuses a pod whose log directory cannot be created: its
// name would pass the file system's limit.
type logsDirAdmitter struct{}

func (logsDirAdmitter) Name() string { return "pod-logs-dir" }

func (logsDirAdmitter) Admit(_ context.Context, pod *v1.Pod, _ []*v1.Pod) Admission {
	if err := podruntime.CheckPodLogsDirName(pod); err != nil {
		return Admission{Reason: "PodNameTooLong", Message: err.Error()}
	}
	return Admission{Admit: true}
}

// admit runs every admitter in order; the first refusal or retry wins.
func admit(ctx context.Context, admitters []Admitter, pod *v1.Pod, admitted []*v1.Pod) (Admission, string) {
	for _, a := range admitters {
		if verdict := a.Admit(ctx, pod, admitted); !verdict.Admit {
			return verdict, a.Name()
		}
	}
	return Admission{Admit: true}, ""
}

// rejectedPods are the UIDs of the pods refused at admission. The loop
// changes them while ActivePods, which the host service calls, reads them.
type rejectedPods struct {
	mu   sync.RWMutex
	uids sets.Set[types.UID]
}

func newRejectedPods() *rejectedPods {
	return &rejectedPods{uids: sets.New[types.UID]()}
}

func (r *rejectedPods) insert(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uids.Insert(uid)
}

func (r *rejectedPods) delete(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uids.Delete(uid)
}

func (r *rejectedPods) has(uid types.UID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.uids.Has(uid)
}
