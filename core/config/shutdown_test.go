package config

import (
	"reflect"
	"testing"
	"time"
)

// TestShutdownGracePeriodsByPodPriority: the HCL map of priorities to
// whole-second durations becomes upstream's list, by priority.
func TestShutdownGracePeriodsByPodPriority(t *testing.T) {
	c := &Config{ShutdownGracePeriodByPodPriority: map[string]string{
		"2000000000": "5s", "0": "20s", "-5": "0s", "100000": "1m",
	}}
	got, err := c.ShutdownGracePeriodsByPodPriority()
	if err != nil {
		t.Fatal(err)
	}
	want := []PriorityGracePeriod{{-5, 0}, {0, 20 * time.Second}, {100000, time.Minute}, {2000000000, 5 * time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("periods = %v, want %v", got, want)
	}
	for _, bad := range []map[string]string{{"2147483648": "1s"}, {"0": "1.5s"}, {"0": "soon"}} {
		if _, err := (&Config{ShutdownGracePeriodByPodPriority: bad}).ShutdownGracePeriodsByPodPriority(); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
}
