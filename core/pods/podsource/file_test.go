package podsource

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// startFile runs a file source on path, with periodic re-reads far apart so
// that every change seen is inotify's doing.
func startFile(t *testing.T, path string, logs *logBuffer) (*File, <-chan Update) {
	t.Helper()
	f, err := NewFile(FileConfig{Path: path, CheckFrequency: time.Hour, NodeName: "node1"}, testLogger(logs), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan Update)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		f.Run(ctx, out)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f, out
}

func write(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename, as editors and config management do, so the
	// source never reads a half-written file.
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "x:1"))
	write(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "x:1"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "c.yaml"), manifest("c", "x:1"))
	logs := &logBuffer{}
	f, out := startFile(t, dir, logs)

	u := next(t, out)
	if u.Source != FileSource || u.Op != OpSet || names(u.Pods) != "default/a-node1" {
		t.Fatalf("first update %s %s [%s]; want SET file [default/a-node1]", u.Source, u.Op, names(u.Pods))
	}
	goodA := u.Pods[0]
	if goodA.Annotations["kubernetes.io/config.hash"] != string(goodA.UID) {
		t.Errorf("pod lacks its static identity: %v", goodA.ObjectMeta)
	}

	write(t, filepath.Join(dir, "b.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"x:1"}]}}`)
	if u = next(t, out); names(u.Pods) != "default/a-node1,default/b-node1" {
		t.Fatalf("after adding b: [%s]", names(u.Pods))
	}

	// Breaking a: its last good pod stays; nothing is sent until the set
	// changes, which adding d does.
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "x:2")+"  restartPolicy: Sometimes\n")
	write(t, filepath.Join(dir, "d.yaml"), manifest("d", "x:1"))
	u = next(t, out)
	if names(u.Pods) != "default/a-node1,default/b-node1,default/d-node1" || u.Pods[0].UID != goodA.UID {
		t.Fatalf("after breaking a and adding d: [%s], a's UID %s; want a's last good pod (%s) kept", names(u.Pods), u.Pods[0].UID, goodA.UID)
	}
	// The broken manifest is judged once the directory has been quiet for
	// a while, and reported once.
	brokenLines := func() int {
		return logs.count("static pod manifest is broken; its last good pod keeps running", filepath.Join(dir, "a.yaml"),
			`line 9: spec.restartPolicy: Unsupported value: \"Sometimes\"`)
	}
	eventually(t, "the broken manifest is reported", func() bool { return brokenLines() > 0 })
	if n := brokenLines(); n != 1 {
		t.Errorf("%d log lines about the broken manifest; want exactly 1:\n%s", n, logs.buf.String())
	}
	if n := testutil.ToFloat64(f.errors.WithLabelValues(FileSource, filepath.Join(dir, "a.yaml"))); n != 1 {
		t.Errorf("%s = %v; want 1", manifestErrorsName, n)
	}

	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "x:2"))
	u = next(t, out)
	if names(u.Pods) != "default/a-node1,default/b-node1,default/d-node1" || u.Pods[0].UID == goodA.UID {
		t.Fatalf("after fixing a: [%s]; want a with a new UID", names(u.Pods))
	}

	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if u = next(t, out); names(u.Pods) != "default/b-node1,default/d-node1" {
		t.Fatalf("after removing a: [%s]", names(u.Pods))
	}
}

// TestFileScanJudgesUndecodableManifestsWhenSettled follows one manifest
// through an edit: a read during a burst of events (not settled) leaves a
// manifest that does not decode as it was, unreported, since it may be
// half-written; a settled read reports it, once.
func TestFileScanJudgesUndecodableManifestsWhenSettled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	logs := &logBuffer{}
	f, err := NewFile(FileConfig{Path: dir, NodeName: "node1"}, testLogger(logs), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	const brokenNew, brokenKept = "static pod manifest is broken; no pod runs from it", "static pod manifest is broken; its last good pod keeps running"
	for _, step := range []struct {
		what         string
		content      string
		settled      bool
		wantPods     string
		wantDeferred bool
		// wantReports counts the log lines (and the error metric) about
		// the broken manifest so far.
		wantReports float64
		reportLine  string
	}{
		{"created empty, during the burst", "", false, "", true, 0, brokenNew},
		{"written, during the burst", manifest("a", "x:1"), false, "default/a-node1", false, 0, brokenNew},
		{"half rewritten, during the burst", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n", false, "default/a-node1", true, 0, brokenKept},
		{"still half rewritten, settled", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n", true, "default/a-node1", false, 1, brokenKept},
		{"unchanged, settled again", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n", true, "default/a-node1", false, 1, brokenKept},
		{"fixed, during the burst", manifest("a", "x:2"), false, "default/a-node1", false, 1, brokenKept},
	} {
		// In place, as an editor writing over the file.
		if err := os.WriteFile(path, []byte(step.content), 0o644); err != nil {
			t.Fatal(err)
		}
		pods, deferred, ok := f.scan(step.settled)
		if !ok || names(pods) != step.wantPods || deferred != step.wantDeferred {
			t.Fatalf("%s: scan = [%s], deferred %v, ok %v; want [%s], deferred %v, ok", step.what, names(pods), deferred, ok, step.wantPods, step.wantDeferred)
		}
		if n := float64(logs.count(step.reportLine, path)); n != step.wantReports {
			t.Errorf("%s: %v log lines %q; want %v:\n%s", step.what, n, step.reportLine, step.wantReports, logs.buf.String())
		}
		if n := testutil.ToFloat64(f.errors.WithLabelValues(FileSource, path)); n != step.wantReports {
			t.Errorf("%s: %s = %v; want %v", step.what, manifestErrorsName, n, step.wantReports)
		}
	}
	if pods, _, _ := f.scan(true); pods[0].Spec.Containers[0].Image != "x:2" {
		t.Errorf("after the fix the pod runs image %s; want x:2", pods[0].Spec.Containers[0].Image)
	}
}

func TestFileSourceBrokenFromTheStart(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n spec: {}\n")
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "x:1"))
	logs := &logBuffer{}
	_, out := startFile(t, dir, logs)
	if u := next(t, out); names(u.Pods) != "default/b-node1" {
		t.Fatalf("first update [%s]; want only b", names(u.Pods))
	}
	if n := logs.count("static pod manifest is broken; no pod runs from it", "line 5: invalid YAML: did not find expected key"); n != 1 {
		t.Errorf("%d log lines about the broken manifest; want 1:\n%s", n, logs.buf.String())
	}
}

func TestFileSourceMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	_, out := startFile(t, dir, &logBuffer{})
	if u := next(t, out); u.Op != OpSet || len(u.Pods) != 0 {
		t.Fatalf("first update %s with %d pods; want an empty SET", u.Op, len(u.Pods))
	}
	// The directory's creation is watched for.
	tmp := dir + ".tmp"
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tmp, "a.yaml"), manifest("a", "x:1"))
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	if u := next(t, out); names(u.Pods) != "default/a-node1" {
		t.Fatalf("after creating the directory: [%s]", names(u.Pods))
	}
	// And the directory's own watch is set up once it exists.
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "x:1"))
	if u := next(t, out); names(u.Pods) != "default/a-node1,default/b-node1" {
		t.Fatalf("after adding b: [%s]", names(u.Pods))
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// Each removal is read as it happens: the sets may shrink in steps.
	for u := next(t, out); len(u.Pods) != 0; u = next(t, out) {
		if names(u.Pods) != "default/a-node1" && names(u.Pods) != "default/b-node1" {
			t.Fatalf("while removing the directory: [%s]", names(u.Pods))
		}
	}
}

func TestFileSourceSingleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etcd.yaml")
	write(t, path, manifest("etcd", "x:1"))
	_, out := startFile(t, path, &logBuffer{})
	u := next(t, out)
	if names(u.Pods) != "default/etcd-node1" {
		t.Fatalf("first update [%s]", names(u.Pods))
	}
	first := u.Pods[0]
	write(t, path, manifest("etcd", "x:2"))
	u = next(t, out)
	if names(u.Pods) != "default/etcd-node1" || u.Pods[0].UID == first.UID || u.Pods[0].Spec.Containers[0].Image != "x:2" {
		t.Fatalf("after the change: [%s] %v", names(u.Pods), u.Pods)
	}
}

func TestNewFileValidatesConfig(t *testing.T) {
	for _, cfg := range []FileConfig{{Path: "relative", NodeName: "n"}, {Path: "/etc/manifests"}} {
		if _, err := NewFile(cfg, testLogger(&logBuffer{}), prometheus.NewRegistry()); err == nil {
			t.Errorf("NewFile(%+v) accepted", cfg)
		}
	}
	// Two sources on one registry share the counter.
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := NewFile(FileConfig{Path: "/etc/manifests", NodeName: "n"}, testLogger(&logBuffer{}), reg); err != nil {
			t.Fatal(err)
		}
	}
}
