//go:build e2e

package podruntime_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/runtime/container"
)

// A container that exits 0 on SIGTERM within a fraction of a second.
const politeLoop = `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]`

// A container that takes a second to exit 0 on SIGTERM.
const slowPoliteLoop = `["sh", "-c", "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.2; done"]`

func TestE2EInitSidecarAndContainersStartInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: ordered}
spec:
  terminationGracePeriodSeconds: 20
  initContainers:
  - {name: init, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "sleep 1"]}
  - {name: side, image: IMAGE, imagePullPolicy: Never, restartPolicy: Always, command: ` + politeLoop + `}
  containers:
  - {name: one, image: IMAGE, imagePullPolicy: Never, command: ` + slowPoliteLoop + `}
  - {name: two, image: IMAGE, imagePullPolicy: Never, command: ` + slowPoliteLoop + `}
`)
	s, results := e.syncUntil(ctx, pod, nil, "all containers running", running("side", "one", "two"))
	for _, r := range results {
		if err := r.Err(); err != nil {
			t.Errorf("sync failed: %v", err)
		}
	}
	init, side, one, two := s.Container("init"), s.Container("side"), s.Container("one"), s.Container("two")
	if init.State != container.StateExited || init.ExitCode != 0 {
		t.Fatalf("init container %s exit %d, want exited 0", init.State, init.ExitCode)
	}
	// The runtime's timestamps tell the order.
	if side.StartedAt.Before(init.FinishedAt) {
		t.Errorf("sidecar started at %v, before the init container finished at %v", side.StartedAt, init.FinishedAt)
	}
	for _, c := range []*container.ContainerStatus{one, two} {
		if c.StartedAt.Before(side.StartedAt) {
			t.Errorf("%s started at %v, before the sidecar at %v", c.Name, c.StartedAt, side.StartedAt)
		}
		if c.RestartCount != 0 || c.Attempt != 0 {
			t.Errorf("%s restart count %d, attempt %d; want 0", c.Name, c.RestartCount, c.Attempt)
		}
	}
	if n := len(s.Sandboxes); n != 1 || s.Sandboxes[0].State != container.SandboxReady || len(s.Sandboxes[0].IPs) == 0 {
		t.Errorf("sandboxes: %s", describe(s))
	}

	// Killing stops the regular containers first, the sidecar after them
	// (which, stopping faster, would otherwise finish first).
	start := time.Now()
	if err := e.m.KillPod(ctx, pod, e.runtimePod(ctx, pod), nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("killing containers that stop on SIGTERM took %v, near the 20 s grace period", took)
	}
	s = e.status(ctx, pod)
	side, one, two = s.Container("side"), s.Container("one"), s.Container("two")
	for _, c := range []*container.ContainerStatus{side, one, two} {
		if c.State != container.StateExited || c.ExitCode != 0 {
			t.Errorf("%s after KillPod: %s exit %d, want exited 0 (stopped by SIGTERM)", c.Name, c.State, c.ExitCode)
		}
	}
	if side.FinishedAt.Before(one.FinishedAt) || side.FinishedAt.Before(two.FinishedAt) {
		t.Errorf("sidecar finished at %v, before the regular containers (%v, %v)", side.FinishedAt, one.FinishedAt, two.FinishedAt)
	}
	if s.Sandboxes[0].State != container.SandboxNotReady {
		t.Errorf("sandbox %s after KillPod, want notready", s.Sandboxes[0].State)
	}
	// Killing a dead pod succeeds.
	if err := e.m.KillPod(ctx, pod, e.runtimePod(ctx, pod), nil); err != nil {
		t.Errorf("KillPod of a dead pod: %v", err)
	}
}

func TestE2ERestartPolicies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		policy      v1.RestartPolicy
		wantStarted []string
	}{
		{v1.RestartPolicyAlways, []string{"fail", "ok"}},
		{v1.RestartPolicyOnFailure, []string{"fail"}},
		{v1.RestartPolicyNever, nil},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: policy-` + strings.ToLower(string(tc.policy)) + `}
spec:
  restartPolicy: ` + string(tc.policy) + `
  containers:
  - {name: ok, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "exit 0"]}
  - {name: fail, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "exit 3"]}
`)
			if err := e.m.SyncPod(ctx, pod, e.status(ctx, pod), nil).Err(); err != nil {
				t.Fatalf("first sync: %v", err)
			}
			s := e.waitFor(ctx, pod, "both containers exited", exited("ok", "fail"))
			if s.Container("ok").ExitCode != 0 || s.Container("fail").ExitCode != 3 {
				t.Fatalf("exit codes: %s", describe(s))
			}

			r := e.m.SyncPod(ctx, pod, s, nil)
			if err := r.Err(); err != nil {
				t.Fatalf("second sync: %v", err)
			}
			var started []string
			killed := false
			for _, step := range r.Steps {
				switch step.Action {
				case podruntime.ActionStartContainer:
					started = append(started, step.Target)
				case podruntime.ActionKillPodSandbox:
					killed = true
				}
			}
			slices.Sort(started)
			if !slices.Equal(started, tc.wantStarted) {
				t.Errorf("restarted %v, want %v", started, tc.wantStarted)
			}
			s = e.status(ctx, pod)
			for _, name := range []string{"ok", "fail"} {
				want := 1
				if slices.Contains(tc.wantStarted, name) {
					want = 2
					if c := s.Container(name); c.RestartCount != 1 || c.Attempt != 1 {
						t.Errorf("restarted %s has restart count %d, attempt %d; want 1", name, c.RestartCount, c.Attempt)
					}
				}
				if got := instances(s, name); got != want {
					t.Errorf("%s has %d instances, want %d", name, got, want)
				}
			}
			if tc.policy != v1.RestartPolicyNever {
				return
			}
			// Under Never the finished pod is killed, and its dead sandbox
			// stays dead.
			if !killed || s.Sandboxes[0].State != container.SandboxNotReady {
				t.Errorf("finished Never pod: sandbox killed %v, status %s", killed, describe(s))
			}
			r = e.m.SyncPod(ctx, pod, s, nil)
			for _, step := range r.Steps {
				if step.Action == podruntime.ActionCreatePodSandbox || step.Action == podruntime.ActionStartContainer {
					t.Errorf("a finished Never pod was revived: %+v", step)
				}
			}
		})
	}
}

func TestE2ECrashLoopBackOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - {name: crash, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "exit 1"]}
`)
	crashed := func(restarts int) func(*container.PodStatus) bool {
		return func(s *container.PodStatus) bool {
			c := s.Container("crash")
			return c != nil && c.State == container.StateExited && c.RestartCount == restarts
		}
	}
	e.syncUntil(ctx, pod, nil, "the first crash", crashed(0))
	// The first restart is immediate.
	s, _ := e.syncUntil(ctx, pod, nil, "the second crash", crashed(1))

	r := e.m.SyncPod(ctx, pod, s, nil)
	if !errors.Is(r.Err(), podruntime.ErrCrashLoopBackOff) || !r.OnlyBackOff() {
		t.Fatalf("sync right after the second crash: %v (steps %v), want only CrashLoopBackOff", r.Err(), failedSteps(r))
	}
	step := r.Steps[len(r.Steps)-1]
	if step.Reason != podruntime.ReasonCrashLoopBackOff || !strings.HasPrefix(step.Message, "back-off 10s restarting failed container=crash pod=crasher-node-e2e_default(") {
		t.Errorf("backoff step %+v", step)
	}
	if got := instances(e.status(ctx, pod), "crash"); got != 2 {
		t.Errorf("%d instances during the backoff, want 2", got)
	}

	// Once the 10 s have passed (on the manager's clock), it restarts.
	e.clockOffset.Store(int64(11 * time.Second))
	r = e.m.SyncPod(ctx, pod, e.status(ctx, pod), nil)
	if err := r.Err(); err != nil {
		t.Fatalf("sync after the backoff: %v", err)
	}
	s = e.waitFor(ctx, pod, "the third crash", crashed(2))
	// And now it waits 20 s.
	r = e.m.SyncPod(ctx, pod, s, nil)
	if msg := r.Steps[len(r.Steps)-1].Message; !strings.HasPrefix(msg, "back-off 20s") {
		t.Errorf("second backoff message %q, want back-off 20s", msg)
	}
}

func TestE2EGracePeriodIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 4
  containers:
  - name: stubborn
    image: IMAGE
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'echo ignoring TERM' TERM; while true; do sleep 0.2; done"]
`)
	e.syncUntil(ctx, pod, nil, "the container running", running("stubborn"))
	start := time.Now()
	if err := e.m.KillPod(ctx, pod, e.runtimePod(ctx, pod), nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	c := e.status(ctx, pod).Container("stubborn")
	if c.State != container.StateExited || c.ExitCode != 137 {
		t.Fatalf("container %s exit %d, want killed by SIGKILL (137)", c.State, c.ExitCode)
	}
	// It ignores SIGTERM, so it dies when the 4 s grace period ends: not
	// before, and not much after.
	lived := c.FinishedAt.Sub(start)
	if lived < 3*time.Second || lived > 10*time.Second {
		t.Errorf("container killed %v after KillPod began, want about the 4 s grace period", lived)
	}

	// An override (eviction's hard kill) shortens it to the 2 s minimum.
	pod2 := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: stubborn2}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - {name: stubborn, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "trap 'echo ignoring TERM' TERM; while true; do sleep 0.2; done"]}
`)
	e.syncUntil(ctx, pod2, nil, "the container running", running("stubborn"))
	start = time.Now()
	zero := int64(0)
	if err := e.m.KillPod(ctx, pod2, e.runtimePod(ctx, pod2), &zero); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	c = e.status(ctx, pod2).Container("stubborn")
	if lived := c.FinishedAt.Sub(start); c.ExitCode != 137 || lived < time.Second || lived > 8*time.Second {
		t.Errorf("with grace override 0 the container died %v after KillPod (exit %d), want after the 2 s minimum", lived, c.ExitCode)
	}
}

func TestE2EImagePullPolicyNeverWithMissingImage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec:
  containers:
  - {name: app, image: localhost/missing:1, imagePullPolicy: Never}
`)
	r := e.m.SyncPod(ctx, pod, e.status(ctx, pod), nil)
	if !errors.Is(r.Err(), podruntime.ErrImageNeverPull) {
		t.Fatalf("sync: %v, want ErrImageNeverPull", r.Err())
	}
	step := r.Steps[len(r.Steps)-1]
	if step.Action != podruntime.ActionStartContainer || step.Target != "app" || step.Reason != podruntime.ReasonErrImageNeverPull ||
		step.Message != `Container image "localhost/missing:1" is not present with pull policy of Never` {
		t.Errorf("step %+v", step)
	}
	if r.OnlyBackOff() {
		t.Error("ErrImageNeverPull counted as a backoff")
	}
	// The sandbox was made; the container was not.
	s := e.status(ctx, pod)
	if len(s.Sandboxes) != 1 || len(s.Containers) != 0 {
		t.Errorf("status %s, want one sandbox and no container", describe(s))
	}
}
