package memnotify

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/internal/prereq"
)

// The tests below arm real kernel notifications on private cgroups and make
// a helper process (this test binary, re-executed) use memory in them.
const (
	helperEnv = "MEMNOTIFY_TEST_HELPER"
	// notifyTimeout bounds the wait for a notification: reaching it is a
	// failure, not a timing assertion.
	notifyTimeout = 30 * time.Second
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "allocate":
		allocate()
	case "thrash":
		thrash()
	}
}

// allocate waits for a line on stdin, then touches as many bytes of memory
// as its first argument says, and holds them until stdin closes.
func allocate() {
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(1)
	}
	size, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if err != nil {
		os.Exit(2)
	}
	held := make([]byte, size)
	for i := 0; i < len(held); i += os.Getpagesize() {
		held[i] = 1
	}
	io.Copy(io.Discard, in)
	held[0]++
	os.Exit(0)
}

// thrash waits for a line on stdin, then reads the file its first argument
// names over and over until killed, dropping its cached pages before each
// pass so that the pass charges them to its memory cgroup again: inside a
// cgroup smaller than the file, every read reclaims.
func thrash() {
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(1)
	}
	file := os.Args[len(os.Args)-1]
	for {
		f, err := os.Open(file)
		if err != nil {
			os.Exit(2)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			os.Exit(3)
		}
		io.Copy(io.Discard, f)
		f.Close()
	}
}

// helper starts this binary as the named helper, stopped by its pid when
// the test ends. It waits for start() before it uses memory, so that the
// test can first move it into its cgroups.
func helper(t *testing.T, mode string, arg string) (pid int, start func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd.Process.Pid, func() {
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// privateCgroup makes the cgroup <mount><root>/app and removes it, then
// root, when the test ends, after the helper it holds has been stopped
// (cleanups run last registered first: make the cgroup before starting the
// helper).
func privateCgroup(t *testing.T, mount, root string) string {
	t.Helper()
	dir := filepath.Join(mount, root, "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{dir, filepath.Join(mount, root)} {
			// The helper is reaped, but the kernel may take a moment to
			// let its cgroup go.
			deadline := time.Now().Add(10 * time.Second)
			err := syscall.Rmdir(d)
			for err != nil && !errors.Is(err, syscall.ENOENT) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				err = syscall.Rmdir(d)
			}
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				t.Errorf("removing cgroup %s: %v", d, err)
			}
		}
	})
	return dir
}

func joinCgroup(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("moving pid %d into %s: %v", pid, dir, err)
	}
}

func requireRoot(t *testing.T) *machine.Cgroups {
	t.Helper()
	prereq.Root(t, "it makes cgroups")
	cg, err := machine.DetectCgroups()
	if err != nil {
		prereq.Missing(t, "no cgroups: %v", err)
	}
	return cg
}

func randomCgroupRoot(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "/memnotify-test-" + hex.EncodeToString(b)
}

func waitEvent(t *testing.T, n *Notifier) Event {
	t.Helper()
	select {
	case e := <-n.Events():
		return e
	case <-time.After(notifyTimeout):
		t.Fatalf("no notification within %v; armed: %v", notifyTimeout, n.Armed())
		return Event{}
	}
}

// TestV1ThresholdFires arms a memcg threshold on a private v1 cgroup and
// has a process allocate past it.
func TestV1ThresholdFires(t *testing.T) {
	cg := requireRoot(t)
	if cg.Version() != 1 {
		// The machine's cgroup mode is no prerequisite one can install.
		t.Skip("the memory controller is not on cgroup v1 here")
	}
	root := randomCgroupRoot(t)
	dir := privateCgroup(t, cg.V1["memory"], root)

	n, err := New(Options{Cgroups: cg, CgroupRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	// A first level that is replaced: only the second one stays armed.
	if err := n.Arm([]Threshold{{Cgroup: "/app", UsageBytes: 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	if err := n.Arm([]Threshold{{Cgroup: "/app", UsageBytes: 16 << 20}}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(n.Armed()), fmt.Sprintf("[threshold %q %d]", "/app", 16<<20); got != want {
		t.Fatalf("armed %s, want %s", got, want)
	}

	if over := n.Exceeded(); len(over) != 0 {
		t.Fatalf("exceeded %v before anything used memory", over)
	}

	pid, start := helper(t, "allocate", strconv.Itoa(64<<20))
	joinCgroup(t, dir, pid)
	start()
	if e := waitEvent(t, n); e != (Event{Cgroup: "/app", Source: sourceThreshold}) {
		t.Errorf("event %+v, want a threshold crossing of /app", e)
	}

	// The gap Exceeded closes: the same level armed again keeps the fired
	// watch, and the kernel, which signals crossings only, stays quiet while
	// usage grows further above it. Only Exceeded tells.
	if err := n.Arm([]Threshold{{Cgroup: "/app", UsageBytes: 16 << 20}}); err != nil {
		t.Fatal(err)
	}
	more, startMore := helper(t, "allocate", strconv.Itoa(64<<20))
	joinCgroup(t, dir, more)
	startMore()
	waitUsage(t, dir, 100<<20)
	select {
	case e := <-n.Events():
		t.Logf("the kernel signalled again above the level (%+v): kinder than documented", e)
	case <-time.After(2 * time.Second):
	}
	if got, want := fmt.Sprint(n.Exceeded()), fmt.Sprintf("[threshold %q %d]", "/app", 16<<20); got != want {
		t.Errorf("exceeded %s, want %s", got, want)
	}
}

// waitUsage waits until the v1 memory cgroup dir uses at least bytes.
func waitUsage(t *testing.T, dir string, bytes uint64) {
	t.Helper()
	deadline := time.Now().Add(notifyTimeout)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
		if err != nil {
			t.Fatal(err)
		}
		used, err := strconv.ParseUint(string(b[:len(b)-1]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if used >= bytes {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage of %s is %d after %v, want at least %d", dir, used, notifyTimeout, bytes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestV2PSITriggerFires arms the cgroup v2 PSI trigger on a cgroup of the
// unified tree (memory.events is not offered there without the v2 memory
// controller) and makes a process in it stall on memory: it reads a file
// larger than the v1 memory cgroup it is also in, reclaiming all the time.
func TestV2PSITriggerFires(t *testing.T) {
	cg := requireRoot(t)
	if cg.Unified == "" || cg.Version() != 1 {
		// The machine's cgroup mode and its kernel's boot options are no
		// prerequisites one can install.
		t.Skip("needs a hybrid machine: the memory stall comes from a v1 memory limit")
	}
	if _, err := os.Stat(filepath.Join(cg.Unified, "memory.pressure")); err != nil {
		t.Skipf("the kernel offers no PSI: %v", err)
	}
	root := randomCgroupRoot(t)
	unified := privateCgroup(t, cg.Unified, root)
	memory := privateCgroup(t, cg.V1["memory"], root)
	if err := os.WriteFile(filepath.Join(memory, "memory.limit_in_bytes"), []byte(strconv.Itoa(8<<20)), 0); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(data, make([]byte, 64<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	n, err := New(Options{
		Cgroups:    &machine.Cgroups{Mode: machine.CgroupV2, Unified: cg.Unified},
		CgroupRoot: root,
		// Sensitive, so that a page cache thrash of one process fires it.
		PSITrigger: "some 10000 2000000",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Arm([]Threshold{{Cgroup: "/app", UsageBytes: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(n.Armed()), fmt.Sprintf("[psi %q]", "/app"); got != want {
		t.Fatalf("armed %s, want %s", got, want)
	}

	pid, start := helper(t, "thrash", data)
	joinCgroup(t, unified, pid)
	joinCgroup(t, memory, pid)
	start()
	if e := waitEvent(t, n); e != (Event{Cgroup: "/app", Source: sourcePSI}) {
		t.Errorf("event %+v, want a PSI notification of /app", e)
	}
}
