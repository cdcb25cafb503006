package devnode

import (
	"testing"
)

// endRecorder records how SkipOrFail ends a test.
type endRecorder struct {
	testing.TB
	ended string
}

func (r *endRecorder) Helper()                   {}
func (r *endRecorder) Fatalf(string, ...any)     { r.ended = "failed" }
func (r *endRecorder) Skipf(string, ...any)      { r.ended = "skipped" }
func (r *endRecorder) Logf(string, ...any)       {}
func (r *endRecorder) Errorf(f string, a ...any) { r.TB.Errorf(f, a...) }

func TestAMissingPrerequisiteFailsUnderCI(t *testing.T) {
	for ci, want := range map[string]string{"true": "failed", "": "skipped", "false": "skipped"} {
		t.Setenv(envCI, ci)
		r := &endRecorder{TB: t}
		SkipOrFail(r, "no etcd")
		if r.ended != want {
			t.Errorf("CI=%q: the test %s, want %s", ci, r.ended, want)
		}
	}
}
