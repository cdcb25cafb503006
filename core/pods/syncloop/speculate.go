package syncloop

import (
	"context"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pods/status"
)

// PureAdmitter is an admitter that may say its verdict depends only on the
// pod, the admitted pods and the node, and that asking changes nothing
// (no allocation): the loop may then ask it about the new pods of a burst
// at once.
type PureAdmitter interface {
	Admitter
	// Pure reports whether Admit has no effect beyond its verdict now.
	Pure() bool
}

func isPure(a Admitter) bool {
	p, ok := a.(PureAdmitter)
	return ok && p.Pure()
}

// speculationWidth bounds the admissions of a burst asked at once.
const speculationWidth = 16

// speculation is the verdict of the leading pure admitters on one new pod
// of a burst, reached assuming that every pod before it in the burst was
// admitted.
type speculation struct {
	// assumed are the pods the verdict assumed admitted.
	assumed []*v1.Pod
	verdict Admission
	by      string
}

// pureLead is how many of admitters, from the first, are pure: those a
// speculation asks, and whose verdict it stands for.
func pureLead(admitters []Admitter) int {
	n := 0
	for n < len(admitters) && isPure(admitters[n]) {
		n++
	}
	return n
}

// speculate asks the leading pure admitters about every new pod of a burst
// at once, each pod with the admitted pods as they will be if every pod
// before it is admitted. Admission itself stays in order: a pod whose
// admitted pods turn out otherwise (one before it was refused, or a pod
// finished meanwhile) is asked again then. Admitters that are plugins (the
// eviction and cgroup plugins' Admit) cost a round trip each, which on a
// loaded node reached 160 ms a pod: in turn, the thirtieth pod of a burst
// waited 5 s for the loop to admit it, where the kubelet's in-process
// admission takes microseconds.
func (l *Loop) speculate(ctx context.Context, pods []*v1.Pod) map[types.UID]*speculation {
	n := pureLead(l.opts.Admitters)
	if n == 0 || len(pods) < 2 {
		return nil
	}
	admitted := l.admittedPods("")
	out := make(map[types.UID]*speculation, len(pods))
	slots := make(chan struct{}, speculationWidth)
	var wg sync.WaitGroup
	for _, pod := range pods {
		if _, known := l.desired.get(pod.UID); known || l.workers.IsPodKnownTerminated(pod.UID) || status.IsTerminalPhase(pod.Status.Phase) {
			continue // admitAndStart does not admit it
		}
		s := &speculation{assumed: slices.Clone(admitted)}
		out[pod.UID] = s
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			s.verdict, s.by = admit(ctx, l.opts.Admitters[:n], pod, s.assumed)
		})
		admitted = append(admitted, l.allocated(pod))
	}
	wg.Wait()
	return out
}

// admitWith runs the admitters on pod, taking the speculation's verdict
// when it assumed exactly the pods admitted now.
func (l *Loop) admitWith(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod, s *speculation) (Admission, string) {
	if s == nil || !uidsOf(s.assumed).Equal(uidsOf(admitted)) {
		return admit(ctx, l.opts.Admitters, pod, admitted)
	}
	if !s.verdict.Admit {
		return s.verdict, s.by
	}
	return admit(ctx, l.opts.Admitters[pureLead(l.opts.Admitters):], pod, admitted)
}

func uidsOf(pods []*v1.Pod) sets.Set[types.UID] {
	out := sets.New[types.UID]()
	for _, p := range pods {
		out.Insert(p.UID)
	}
	return out
}

// The core's own admitters are pure.
func (maxPodsAdmitter) Pure() bool { return true }
func (logsDirAdmitter) Pure() bool { return true }
