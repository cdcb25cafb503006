package nodestatus

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStatusChangedIgnoresHeartbeatsAndOrder(t *testing.T) {
	a := &v1.NodeStatus{Conditions: []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)},
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(t0)},
	}}
	b := &v1.NodeStatus{Conditions: []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(t0.Add(time.Minute))},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0.Add(time.Minute))},
	}}
	if StatusChanged(a, b) {
		t.Errorf("heartbeat times and order counted as a change")
	}
	b.Conditions = b.Conditions[:1]
	if !StatusChanged(a, b) {
		t.Errorf("a missing condition is a change")
	}
	c := a.DeepCopy()
	c.Images = []v1.ContainerImage{{Names: []string{"x"}}}
	if !StatusChanged(a, c) {
		t.Errorf("a new image is a change")
	}
}

func TestReportSchedule(t *testing.T) {
	const period = 5 * time.Minute
	tests := []struct {
		name string
		// last post, its delay, and whether it was a change
		last    time.Duration
		delay   time.Duration
		now     time.Duration
		changed bool
		want    bool
	}{
		{name: "changed: at once", last: 0, now: time.Second, changed: true, want: true},
		{name: "unchanged within the period", last: 0, now: 4 * time.Minute, want: false},
		{name: "unchanged after the period", last: 0, now: period, want: true},
		{name: "a negative delay brings it forward", last: 0, delay: -time.Minute, now: 4 * time.Minute, want: true},
		{name: "a positive delay puts it off", last: 0, delay: time.Minute, now: period, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := reportSchedule{period: period, last: t0.Add(tt.last), delay: tt.delay}
			if got := s.due(t0.Add(tt.now), tt.changed); got != tt.want {
				t.Errorf("due = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestReportScheduleDelay(t *testing.T) {
	const period = 5 * time.Minute
	tests := []struct {
		name      string
		first     bool
		changed   bool
		random    float64
		wantDelay time.Duration
	}{
		{name: "first post: random delay", first: true, random: 0, wantDelay: -period / 2},
		{name: "after a change: random delay", changed: true, random: 0.75, wantDelay: period / 4},
		{name: "periodic post: no delay", random: 0.9, wantDelay: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := reportSchedule{period: period, delay: time.Second}
			if !tt.first {
				s.last = t0
			}
			s.posted(t0.Add(time.Hour), tt.changed, tt.random)
			if s.delay != tt.wantDelay || !s.last.Equal(t0.Add(time.Hour)) {
				t.Errorf("delay %v last %v, want %v and %v", s.delay, s.last, tt.wantDelay, t0.Add(time.Hour))
			}
		})
	}
}

func TestImages(t *testing.T) {
	var list []*runtimeapi.Image
	for i := range 60 {
		list = append(list, &runtimeapi.Image{Id: fmt.Sprint(i), Size: uint64(i), RepoTags: []string{fmt.Sprintf("img:%d", i)}})
	}
	list = append(list, &runtimeapi.Image{Id: "big", Size: 1000,
		RepoDigests: []string{"r@sha256:1", "r@sha256:2"}, RepoTags: []string{"r:1", "r:2", "r:3", "r:4"}})
	got := Images(list)
	if len(got) != maxImages {
		t.Fatalf("%d images, want %d", len(got), maxImages)
	}
	want := v1.ContainerImage{Names: []string{"r@sha256:1", "r@sha256:2", "r:1", "r:2", "r:3"}, SizeBytes: 1000}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("largest image (-want +got):\n%s", diff)
	}
	if last := got[len(got)-1]; last.SizeBytes != 11 {
		t.Errorf("smallest listed image is %d bytes, want 11", last.SizeBytes)
	}
	if Images(nil) != nil {
		t.Errorf("no images listed as a non-nil list")
	}
}

func TestHoldNotReady(t *testing.T) {
	const period = 10 * time.Second
	tests := []struct {
		name             string
		postedSinceStart bool
		sinceStart       time.Duration
		ready            bool
		want             bool
	}{
		{name: "starting, not ready yet: held", sinceStart: time.Second, want: true},
		{name: "starting, ready: posted", sinceStart: time.Second, ready: true},
		{name: "not ready after a whole period: posted", sinceStart: period},
		{name: "posted since start: a later NotReady is news", postedSinceStart: true, sinceStart: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holdNotReady(tt.postedSinceStart, tt.sinceStart, period, tt.ready); got != tt.want {
				t.Errorf("holdNotReady = %t, want %t", got, tt.want)
			}
		})
	}
}
