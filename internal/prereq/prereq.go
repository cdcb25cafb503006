// Package prereq is how a test says that this machine lacks something it
// needs (root, a Debian package, etcd, a device): the test is skipped on a
// developer's machine, and fails under CI, which installs everything the
// tests need, so that a suite cannot pass there by skipping.
package prereq

import (
	"fmt"
	"os"
	"testing"
)

// CIEnv is the variable .ci/run sets to "true" (as most CI services do).
const CIEnv = "CI"

// Missing ends t: t.Skip, or t.Fatal under CI=true. The message says what
// is missing and how to get it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv(CIEnv) == "true" {
		t.Fatalf("missing prerequisite under %s=true, where every test must run: %s", CIEnv, why)
	} else {
		t.Skip(why)
	}
}

// Root ends t with Missing unless the test runs as root; does says what
// the test does that needs it.
func Root(t testing.TB, does string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root: %s", does)
	}
}
