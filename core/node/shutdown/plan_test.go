package shutdown

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/status"
)

func ptr[T any](v T) *T { return &v }

func TestPeriods(t *testing.T) {
	for _, tc := range []struct {
		name            string
		total, critical time.Duration
		byPriority      []Period
		want            []Period
	}{
		{name: "off", want: nil},
		{name: "critical over total is ignored, as upstream", total: 10 * time.Second, critical: 20 * time.Second, want: nil},
		{name: "total and critical make two groups", total: 30 * time.Second, critical: 10 * time.Second,
			want: []Period{{0, 20 * time.Second}, {2000000000, 10 * time.Second}}},
		{name: "all for critical pods", total: 10 * time.Second, critical: 10 * time.Second,
			want: []Period{{0, 0}, {2000000000, 10 * time.Second}}},
		{name: "by priority wins and is sorted", total: 30 * time.Second, critical: 10 * time.Second,
			byPriority: []Period{{100000, 5 * time.Second}, {0, 20 * time.Second}, {2000000000, 3 * time.Second}},
			want:       []Period{{0, 20 * time.Second}, {100000, 5 * time.Second}, {2000000000, 3 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Periods(tc.total, tc.critical, tc.byPriority)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Periods = %v, want %v", got, tc.want)
			}
		})
	}
	if got := Requested([]Period{{0, 20 * time.Second}, {5, 3 * time.Second}}); got != 23*time.Second {
		t.Errorf("Requested = %v, want 23s", got)
	}
}

func pod(name string, priority *int32, grace *int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Priority: priority, TerminationGracePeriodSeconds: grace}}
}

func TestGroups(t *testing.T) {
	periods := []Period{{-10, time.Second}, {100, 2 * time.Second}, {1000, 3 * time.Second}}
	pods := []*v1.Pod{
		pod("below-all", ptr[int32](-100), nil),
		pod("no-priority", nil, nil),
		pod("exactly-100", ptr[int32](100), nil),
		pod("between", ptr[int32](999), nil),
		pod("above-all", ptr[int32](5000), nil),
	}
	want := [][]string{{"below-all", "no-priority"}, {"exactly-100", "between"}, {"above-all"}}
	groups := Groups(periods, pods)
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	for i, g := range groups {
		var names []string
		for _, p := range g.Pods {
			names = append(names, p.Name)
		}
		if !reflect.DeepEqual(names, want[i]) || g.Period != periods[i] {
			t.Errorf("group %d (%v): %v, want %v", i, g.Period, names, want[i])
		}
	}
	if Groups(nil, pods) != nil {
		t.Error("no periods must make no groups")
	}
}

func TestPodGrace(t *testing.T) {
	group := Period{Priority: 0, Grace: 20 * time.Second}
	for _, tc := range []struct {
		name string
		own  *int64
		want int64
	}{
		{"no own grace: the group's", nil, 20},
		{"shorter own grace kept", ptr[int64](5), 5},
		{"longer own grace capped", ptr[int64](30), 20},
		{"zero kept", ptr[int64](0), 0},
	} {
		if got := PodGrace(pod("p", nil, tc.own), group); got != tc.want {
			t.Errorf("%s: PodGrace = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestShutdownStatus(t *testing.T) {
	p := pod("p", nil, nil)
	p.Generation = 3
	for _, tc := range []struct{ from, want v1.PodPhase }{{v1.PodRunning, v1.PodFailed}, {v1.PodSucceeded, v1.PodSucceeded}} {
		s := v1.PodStatus{Phase: tc.from}
		status.ShutdownStatusFunc(p, TerminatedReason, TerminatedMessage)(&s)
		if s.Phase != tc.want || s.Reason != "Terminated" || s.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("from %s: %s %q %q", tc.from, s.Phase, s.Reason, s.Message)
		}
		if len(s.Conditions) != 1 || s.Conditions[0].Type != v1.DisruptionTarget || s.Conditions[0].Reason != "TerminationByKubelet" ||
			s.Conditions[0].Status != v1.ConditionTrue || s.Conditions[0].ObservedGeneration != 3 {
			t.Errorf("from %s: conditions %+v", tc.from, s.Conditions)
		}
	}
}
