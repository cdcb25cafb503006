package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPastActiveDeadline(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 1, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-30 * time.Second))
	seconds := func(s int64) *int64 { return &s }
	tests := []struct {
		name     string
		deadline *int64
		start    *metav1.Time
		want     bool
	}{
		{"no deadline", nil, &started, false},
		{"not started", seconds(1), nil, false},
		{"before", seconds(31), &started, false},
		{"at", seconds(30), &started, true},
		{"after", seconds(10), &started, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: tt.deadline}}
			if got := PastActiveDeadline(pod, v1.PodStatus{StartTime: tt.start}, now); got != tt.want {
				t.Errorf("PastActiveDeadline = %t, want %t", got, tt.want)
			}
		})
	}
}
