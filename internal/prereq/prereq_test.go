package prereq

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would have ended,
// instead of ending the calling goroutine.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped = true
	r.msg = fmt.Sprint(args...)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		ci       string
		wantFail bool
	}{
		{"", false},
		{"false", false},
		{"1", false}, // .ci/run sets exactly "true"
		{"true", true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv(CIEnv, tc.ci)
			r := &recorder{TB: t}
			Missing(r, "no %s here", "etcd")
			if r.failed != tc.wantFail || r.skipped == tc.wantFail {
				t.Fatalf("failed=%v skipped=%v, want failed=%v and skipped=%v", r.failed, r.skipped, tc.wantFail, !tc.wantFail)
			}
			if !strings.Contains(r.msg, "no etcd here") {
				t.Errorf("the message %q does not say what is missing", r.msg)
			}
		})
	}
}
