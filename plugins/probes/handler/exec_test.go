package handler

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// fakeExec answers ExecSync calls from a list, one answer per call.
type fakeExec struct {
	answers []execAnswer
	calls   []execCall
}

type execAnswer struct {
	resp *hostv1.ExecSyncResponse
	err  error
}

type execCall struct {
	containerID string
	cmd         []string
	timeout     time.Duration
	deadline    bool
}

func (f *fakeExec) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*hostv1.ExecSyncResponse, error) {
	_, deadline := ctx.Deadline()
	f.calls = append(f.calls, execCall{containerID, cmd, timeout, deadline})
	a := f.answers[min(len(f.calls), len(f.answers))-1]
	return a.resp, a.err
}

func TestExec(t *testing.T) {
	exited := func(code int32, stdout, stderr string) execAnswer {
		return execAnswer{resp: &hostv1.ExecSyncResponse{ExitCode: code, Stdout: []byte(stdout), Stderr: []byte(stderr)}}
	}
	unavailable := execAnswer{err: status.Error(codes.Unavailable, "runtime down")}
	long := strings.Repeat("x", maxOutputLength+100)
	for _, c := range []struct {
		name    string
		answers []execAnswer
		want    Outcome
		calls   int
	}{
		{"exit 0 succeeds with the output", []execAnswer{exited(0, "ok\n", "")}, Outcome{Result: success, Output: "ok\n"}, 1},
		{"exit 1 fails with stdout then stderr", []execAnswer{exited(1, "out\n", "err\n")}, Outcome{Result: failure, Output: "out\nerr\n"}, 1},
		{"output is cut at 10 KiB", []execAnswer{exited(2, long, "tail")}, Outcome{Result: failure, Output: long[:maxOutputLength]}, 1},
		{
			"a command past its timeout fails",
			[]execAnswer{{err: status.Error(codes.DeadlineExceeded, "timeout 1s exceeded")}},
			Outcome{Result: failure, Output: `command timed out: "sh -c sleep 5" timed out after 1s`}, 1,
		},
		{
			"an ExecSync that errors is tried three times, then unknown",
			[]execAnswer{unavailable},
			Outcome{Result: unknown, Output: "rpc error: code = Unavailable desc = runtime down"}, 3,
		},
		{"an error then an answer", []execAnswer{unavailable, exited(0, "", "")}, Outcome{Result: success}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			exec := &fakeExec{answers: c.answers}
			got := NewRunner(exec).Run(t.Context(), probeWith(&probesv1.ExecAction{Command: []string{"sh", "-c", "sleep 5"}}), Target{ContainerID: "c1"})
			if got != c.want {
				t.Errorf("Run = %+v, want %+v", got, c.want)
			}
			if len(exec.calls) != c.calls {
				t.Fatalf("%d ExecSync calls, want %d", len(exec.calls), c.calls)
			}
			call := exec.calls[0]
			if call.containerID != "c1" || strings.Join(call.cmd, " ") != "sh -c sleep 5" || call.timeout != time.Second || !call.deadline {
				t.Errorf("ExecSync(%q, %q, %v, deadline %v); want c1, the probe's command, its 1s timeout and a deadline", call.containerID, call.cmd, call.timeout, call.deadline)
			}
		})
	}
}

func TestNoHandler(t *testing.T) {
	got := NewRunner(&fakeExec{}).Run(t.Context(), &probesv1.Probe{TimeoutSeconds: 1}, Target{ContainerID: "c1"})
	if got.Result != unknown || got.Output != "missing probe handler for container c1" {
		t.Errorf("Run without a handler = %+v", got)
	}
}

// A stopped worker's attempt is not tried again.
func TestRunStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	exec := &fakeExec{answers: []execAnswer{{err: context.Canceled}}}
	got := NewRunner(exec).Run(ctx, probeWith(&probesv1.ExecAction{Command: []string{"true"}}), Target{ContainerID: "c1"})
	if got.Result != unknown || got.Output != context.Canceled.Error() || len(exec.calls) != 1 {
		t.Errorf("Run with an ended context = %+v after %d calls; want unknown after 1", got, len(exec.calls))
	}
}
