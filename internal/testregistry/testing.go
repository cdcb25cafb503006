package testregistry

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/prereq"
)

// StartT starts a registry for t accepting users, stopped and removed
// when t ends. Without docker-registry, which it installs with apt-get as
// root, the test skips, or fails under CI (internal/prereq).
func StartT(t testing.TB, users map[string]string) *Registry {
	t.Helper()
	if err := devnode.EnsureProgram(context.Background(), hclog.NewNullLogger(), Program, "docker-registry"); err != nil {
		prereq.Missing(t, "testregistry: %v", err)
	}
	r, err := Start(context.Background(), "", users)
	if err != nil {
		t.Fatalf("testregistry: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("registry log:\n%s", r.LogTail())
		}
		if err := r.Close(); err != nil {
			t.Errorf("testregistry: close: %v", err)
		}
	})
	return r
}

// PushT pushes img as repoTag, failing t on error.
func (r *Registry) PushT(t testing.TB, img devnode.Image, repoTag, user, password string) {
	t.Helper()
	if err := r.Push(context.Background(), img, repoTag, user, password); err != nil {
		t.Fatalf("push %s: %v", repoTag, err)
	}
}

// BuildCredentialProvider builds the test credential provider plugin
// (internal/testregistry/credprovider) as dir/name.
func BuildCredentialProvider(t testing.TB, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if err := e2e.BuildProgram(out, "./internal/testregistry/credprovider"); err != nil {
		t.Fatalf("the credential provider plugin: %v", err)
	}
	return out
}
