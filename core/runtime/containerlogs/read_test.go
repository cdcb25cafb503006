package containerlogs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// logLine is a CRI log line written at second sec of a fixed minute.
func logLine(sec int, stream, tag, content string) string {
	return fmt.Sprintf("2020-09-27T11:18:%02d.000000000Z %s %s %s\n", sec, stream, tag, content)
}

// podLogDir makes a pod log directory with one container's log,
// app/0.log, holding content.
func podLogDir(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app", "0.log"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func stopped(context.Context) (bool, error) { return false, nil }

// syncBuffer is an output the test reads while Read writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRead(t *testing.T) {
	dir := podLogDir(t, logLine(1, "stdout", "F", "line1")+logLine(2, "stderr", "F", "line2")+
		"garbage that does not parse\n"+logLine(3, "stdout", "P", "part-")+logLine(3, "stdout", "F", "line3"))
	at := func(sec int) *metav1.Time {
		return &metav1.Time{Time: time.Date(2020, 9, 27, 11, 18, sec, 0, time.UTC)}
	}
	for _, tc := range []struct {
		name       string
		opts       v1.PodLogOptions
		noStderr   bool
		wantStdout string
		wantStderr string
	}{
		{name: "everything", wantStdout: "line1\npart-line3\n", wantStderr: "line2\n"},
		{name: "tail 2 counts the partial line", opts: v1.PodLogOptions{TailLines: ptr.To[int64](2)}, wantStdout: "part-line3\n"},
		{name: "tail 3 counts the line that does not parse", opts: v1.PodLogOptions{TailLines: ptr.To[int64](3)}, wantStdout: "part-line3\n"},
		{name: "tail 4", opts: v1.PodLogOptions{TailLines: ptr.To[int64](4)}, wantStdout: "part-line3\n", wantStderr: "line2\n"},
		{name: "tail beyond the file", opts: v1.PodLogOptions{TailLines: ptr.To[int64](100)}, wantStdout: "line1\npart-line3\n", wantStderr: "line2\n"},
		{name: "tail 0", opts: v1.PodLogOptions{TailLines: ptr.To[int64](0)}},
		{name: "limit cuts the line", opts: v1.PodLogOptions{LimitBytes: ptr.To[int64](9)}, wantStdout: "line1\n", wantStderr: "lin"},
		{name: "limit above the size", opts: v1.PodLogOptions{LimitBytes: ptr.To[int64](1000)}, wantStdout: "line1\npart-line3\n", wantStderr: "line2\n"},
		{name: "since time", opts: v1.PodLogOptions{SinceTime: at(2)}, wantStdout: "part-line3\n", wantStderr: "line2\n"},
		{name: "since time after every line", opts: v1.PodLogOptions{SinceTime: at(59)}},
		{name: "timestamps start lines only", opts: v1.PodLogOptions{Timestamps: true},
			wantStdout: "2020-09-27T11:18:01.000000000Z line1\n2020-09-27T11:18:03.000000000Z part-line3\n",
			wantStderr: "2020-09-27T11:18:02.000000000Z line2\n"},
		{name: "timestamps count toward the limit", opts: v1.PodLogOptions{Timestamps: true, LimitBytes: ptr.To[int64](33)},
			wantStdout: "2020-09-27T11:18:01.000000000Z li"},
		{name: "stdout only: stderr counts toward nothing", opts: v1.PodLogOptions{LimitBytes: ptr.To[int64](10)}, noStderr: true,
			wantStdout: "line1\npart"},
		{name: "follow a stopped container reads to the end", opts: v1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](2)},
			wantStdout: "part-line3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var errOut io.Writer = &stderr
			if tc.noStderr {
				errOut = nil
			}
			err := read(context.Background(), Log{Dir: dir, Name: "app/0.log", Running: stopped}, NewOptions(&tc.opts, time.Now()), &stdout, errOut)
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tc.wantStdout || stderr.String() != tc.wantStderr {
				t.Errorf("stdout %q stderr %q; want %q and %q", stdout.String(), stderr.String(), tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

func TestNewOptionsTakesTheLaterSince(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	early := &metav1.Time{Time: now.Add(-time.Hour)}
	late := &metav1.Time{Time: now.Add(-time.Second)}
	for _, tc := range []struct {
		name string
		opts v1.PodLogOptions
		want time.Time
	}{
		{name: "neither", want: time.Time{}},
		{name: "seconds", opts: v1.PodLogOptions{SinceSeconds: ptr.To[int64](60)}, want: now.Add(-time.Minute)},
		{name: "time", opts: v1.PodLogOptions{SinceTime: early}, want: early.Time},
		{name: "seconds later than time", opts: v1.PodLogOptions{SinceSeconds: ptr.To[int64](60), SinceTime: early}, want: now.Add(-time.Minute)},
		{name: "time later than seconds", opts: v1.PodLogOptions{SinceSeconds: ptr.To[int64](60), SinceTime: late}, want: late.Time},
	} {
		if got := NewOptions(&tc.opts, now).Since; !got.Equal(tc.want) {
			t.Errorf("%s: since %v, want %v", tc.name, got, tc.want)
		}
	}
	if o := NewOptions(&v1.PodLogOptions{}, now); o.TailLines != -1 || o.LimitBytes != -1 {
		t.Errorf("no tail or limit: %+v, want -1 for both", o)
	}
}

// TestReadStaysInTheDirectory: a name with ".." and a log replaced by a
// symlink out of the pod's directory both fail, and nothing of the target
// is written.
func TestReadStaysInTheDirectory(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte(logLine(1, "stdout", "F", "SECRET")), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := podLogDir(t, logLine(1, "stdout", "F", "fine"))
	if err := os.Symlink(secret, filepath.Join(dir, "app", "1.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../..", filepath.Join(dir, "app", "up")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"app/1.log", rel, "app/up" + secret} {
		var out bytes.Buffer
		err := read(context.Background(), Log{Dir: dir, Name: name, Running: stopped}, Options{TailLines: -1, LimitBytes: -1}, &out, &out)
		if err == nil || out.Len() > 0 {
			t.Errorf("Read(%q) = %v, wrote %q; want an error and nothing", name, err, out.String())
		}
	}
}

// waitFor polls until the output holds want; the deadline only bounds a
// hang, it asserts no timing.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q never held %q", out.String(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func appendLog(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// TestFollowAcrossRotation follows a log as the kubelet rotates it: the
// file is renamed, the runtime writes a last line to the renamed file and
// then reopens the log, writing on in a new file. Every line arrives once,
// in order, and the follow ends when the container stops.
func TestFollowAcrossRotation(t *testing.T) {
	path, running, out, done := followRunning(t)
	appendLog(t, path, logLine(2, "stderr", "F", "two"))
	waitFor(t, out, "two\n")

	rotated := rotate(t, path)
	appendLog(t, rotated, logLine(3, "stdout", "F", "three"))
	appendLog(t, path, logLine(4, "stdout", "F", "four"))
	waitFor(t, out, "four\n")
	appendLog(t, path, logLine(5, "stdout", "F", "five"))
	waitFor(t, out, "five\n")

	running.Store(false)
	expectFollowed(t, done, out, "one\ntwo\nthree\nfour\nfive\n")
}

// TestFollowWaitsForTheRuntimeToSwitch: containerd makes the new file
// before it stops writing the old one. A follow that sees the new file
// while it is empty reads on in the old one until the runtime writes the
// new one, so the old file's last lines are not lost.
func TestFollowWaitsForTheRuntimeToSwitch(t *testing.T) {
	path, running, out, done := followRunning(t)

	rotated := rotate(t, path)
	appendLog(t, path, "") // the runtime reopens: an empty new file
	// The follow checks the files at least every forceCheckPeriod: let it
	// see the empty new file before the old one gets its last line.
	time.Sleep(2 * forceCheckPeriod)
	appendLog(t, rotated, logLine(2, "stdout", "F", "two"))
	appendLog(t, path, logLine(3, "stdout", "F", "three"))
	waitFor(t, out, "three\n")

	running.Store(false)
	expectFollowed(t, done, out, "one\ntwo\nthree\n")
}

// TestFollowReadsTheNewFileOfAStoppedContainer: a container that stops
// just after a rotation has its last lines in the new file; the follow
// reads them before it ends.
func TestFollowReadsTheNewFileOfAStoppedContainer(t *testing.T) {
	dir := podLogDir(t, logLine(1, "stdout", "F", "one"))
	path := filepath.Join(dir, "app", "0.log")
	var stopping atomic.Bool
	// When asked after stopping is set, the container has been rotated,
	// written its last line in the new file and stopped.
	running := func(context.Context) (bool, error) {
		if !stopping.Load() {
			return true, nil
		}
		if _, err := os.Stat(path + ".20200927-111803"); err != nil {
			if err := os.Rename(path, path+".20200927-111803"); err != nil {
				return false, err
			}
			// Not appendLog: this runs on the follow's goroutine.
			return false, os.WriteFile(path, []byte(logLine(2, "stdout", "F", "two")), 0o644)
		}
		return false, nil
	}
	out, done := follow(context.Background(), dir, running)
	waitFor(t, out, "one\n")

	stopping.Store(true)
	expectFollowed(t, done, out, "one\ntwo\n")
}

// TestFollowEndsWithTheContext: a follow of a running container ends when
// the caller goes away.
func TestFollowEndsWithTheContext(t *testing.T) {
	dir := podLogDir(t, logLine(1, "stdout", "F", "one"))
	ctx, cancel := context.WithCancel(context.Background())
	out, done := follow(ctx, dir, func(context.Context) (bool, error) { return true, nil })
	waitFor(t, out, "one\n")
	cancel()
	if err := <-done; err == nil {
		t.Error("Read returned nil after its context ended; want the context's error")
	}
}

// FuzzRead reads arbitrary file content with arbitrary options: no panic,
// no error (bad lines are skipped), and never more than the limit.
func FuzzRead(f *testing.F) {
	f.Add([]byte(logLine(1, "stdout", "F", "a")+logLine(2, "stderr", "P", "b")), int64(-1), int64(-1), false)
	f.Add([]byte("junk\n\n"+logLine(3, "stdout", "F", "c")), int64(1), int64(3), true)
	f.Add([]byte(logLine(1, "stdout", "F", "no newline")[:40]), int64(0), int64(0), true)
	f.Fuzz(func(t *testing.T, content []byte, tail, limit int64, timestamps bool) {
		dir := podLogDir(t, string(content))
		var out bytes.Buffer
		opts := Options{TailLines: max(tail, -1), LimitBytes: max(limit, -1), Timestamps: timestamps}
		if err := read(context.Background(), Log{Dir: dir, Name: "app/0.log", Running: stopped}, opts, &out, &out); err != nil {
			t.Fatalf("Read: %v", err)
		}
		if opts.LimitBytes >= 0 && int64(out.Len()) > opts.LimitBytes {
			t.Fatalf("wrote %d bytes, limit %d", out.Len(), opts.LimitBytes)
		}
	})
}

// followRunning follows from its start the log of a running container
// that has written "one"; the test stops the container with running.
func followRunning(t *testing.T) (path string, running *atomic.Bool, out *syncBuffer, done <-chan error) {
	t.Helper()
	dir := podLogDir(t, logLine(1, "stdout", "F", "one"))
	running = &atomic.Bool{}
	running.Store(true)
	out, done = follow(context.Background(), dir, func(context.Context) (bool, error) { return running.Load(), nil })
	waitFor(t, out, "one\n")
	return filepath.Join(dir, "app", "0.log"), running, out, done
}

// rotate renames the log as the kubelet's rotation does and returns the
// rotated file's path.
func rotate(t *testing.T, path string) string {
	t.Helper()
	rotated := path + ".20200927-111803"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	return rotated
}

// expectFollowed waits for a follow to end and checks what it wrote.
func expectFollowed(t *testing.T, done <-chan error, out *syncBuffer, want string) {
	t.Helper()
	if err := <-done; err != nil {
		t.Fatalf("Read: %v", err)
	}
	if got := out.String(); got != want {
		t.Errorf("followed %q, want %q", got, want)
	}
}

// follow follows app/0.log in dir from its start, as `kubectl logs -f`
// does, into out; done gets what the follow returns.
func follow(ctx context.Context, dir string, running func(context.Context) (bool, error)) (out *syncBuffer, done <-chan error) {
	out = &syncBuffer{}
	result := make(chan error, 1)
	go func() {
		log := Log{Dir: dir, Name: "app/0.log", Running: running}
		result <- read(ctx, log, Options{TailLines: -1, LimitBytes: -1, Follow: true}, out, out)
	}()
	return out, result
}

// read opens a log and copies it, as the node API does.
func read(ctx context.Context, l Log, opts Options, stdout, stderr io.Writer) error {
	r, err := Open(l, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Copy(ctx, stdout, stderr)
}
