package syncloop

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podconfig"
)

// gateAdmitter admits a pod only once want pods are being asked about at
// the same time; one asked alone is refused after a while.
type gateAdmitter struct {
	mu     sync.Mutex
	asking int
	want   int
	all    chan struct{}
}

func (g *gateAdmitter) Name() string { return "gate" }
func (g *gateAdmitter) Pure() bool   { return true }

func (g *gateAdmitter) Admit(context.Context, *v1.Pod, []*v1.Pod) Admission {
	g.mu.Lock()
	if g.asking++; g.asking == g.want {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
		return Admission{Admit: true}
	case <-time.After(2 * time.Second):
		return Admission{Reason: "Alone", Message: "asked about one pod at a time"}
	}
}

func TestABurstOfPodsIsAdmittedAtOnce(t *testing.T) {
	h := newHarness(t, 0)
	gate := &gateAdmitter{want: 3, all: make(chan struct{})}
	h.loop.opts.Admitters = append(slices.Clone(h.loop.opts.Admitters[:2]), gate)
	pods := []*v1.Pod{h.newPod("a", v1.RestartPolicyAlways), h.newPod("b", v1.RestartPolicyAlways), h.newPod("c", v1.RestartPolicyAlways)}
	h.send(podconfig.OpAdd, pods...)
	for _, p := range pods {
		h.waitSynced(p)
	}
}

// namesAdmitter refuses the pods it names.
type namesAdmitter struct{ refuse []string }

func (namesAdmitter) Name() string { return "names" }
func (namesAdmitter) Pure() bool   { return true }

func (a namesAdmitter) Admit(_ context.Context, pod *v1.Pod, _ []*v1.Pod) Admission {
	if slices.Contains(a.refuse, pod.Name) {
		return Admission{Reason: "Named", Message: "refused by name"}
	}
	return Admission{Admit: true}
}

// roomAdmitter admits while fewer than room pods are admitted.
type roomAdmitter struct{ room int }

func (roomAdmitter) Name() string { return "room" }
func (roomAdmitter) Pure() bool   { return true }

func (a roomAdmitter) Admit(_ context.Context, _ *v1.Pod, admitted []*v1.Pod) Admission {
	if len(admitted) >= a.room {
		return Admission{Reason: "OutOfroom", Message: "no room"}
	}
	return Admission{Admit: true}
}

func TestABurstIsAdmittedAsInTurn(t *testing.T) {
	h := newHarness(t, 0)
	// Speculation assumes every earlier pod of the burst admitted; with b
	// refused, c and d were asked about with the wrong pods admitted and
	// must be asked again: a and c fit, d does not. The impure admitter
	// (the harness's, which records) is asked only about admitted pods,
	// in order.
	h.loop.opts.Admitters = append(slices.Clone(h.loop.opts.Admitters[:2]), namesAdmitter{refuse: []string{"b"}}, roomAdmitter{room: 2}, h.admitter)
	a, b, c, d := h.newPod("a", v1.RestartPolicyAlways), h.newPod("b", v1.RestartPolicyAlways), h.newPod("c", v1.RestartPolicyAlways), h.newPod("d", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, d, c, b, a)
	h.waitSynced(a)
	h.waitSynced(c)
	for pod, reason := range map[*v1.Pod]string{b: "Named", d: "OutOfroom"} {
		if st, ok := h.status(pod); !ok || st.Phase != v1.PodFailed || st.Reason != reason {
			t.Errorf("pod %s: status %+v (%t), want Failed, %s", pod.Name, st, ok, reason)
		}
		expectNeverRuns(h, pod)
	}
	h.admitter.mu.Lock()
	defer h.admitter.mu.Unlock()
	if want := []types.UID{a.UID, c.UID}; !slices.Equal(h.admitter.asked, want) {
		t.Errorf("the impure admitter was asked about %v, want %v", h.admitter.asked, want)
	}
}
