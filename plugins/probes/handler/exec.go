package handler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// runtimeRequestTimeout is upstream's default --runtime-request-timeout,
// which the kubelet adds to the probe's timeout as the deadline of the
// ExecSync call: the runtime enforces the probe's timeout itself, and this
// only ends a call the runtime never answers.
const runtimeRequestTimeout = 2 * time.Minute

// execProbe is upstream's exec probe (pkg/probe/exec with the kubelet's
// ExecSync runner): exit code 0 succeeds, any other fails, both with the
// command's output (stdout then stderr, cut at 10 KiB); a command that
// outlives the timeout fails; an ExecSync that cannot run errors.
func (r *Runner) execProbe(ctx context.Context, a *probesv1.ExecAction, t Target, timeout time.Duration) (outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+runtimeRequestTimeout)
	defer cancel()
	resp, err := r.exec.ExecSync(ctx, t.ContainerID, a.GetCommand(), timeout)
	if status.Code(err) == codes.DeadlineExceeded {
		return failed(fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(a.GetCommand(), " "), timeout)), nil
	}
	if err != nil {
		return outcome{}, err
	}
	output := slices.Concat(resp.GetStdout(), resp.GetStderr())
	if len(output) > maxOutputLength {
		output = output[:maxOutputLength]
	}
	if resp.GetExitCode() != 0 {
		return failed(string(output)), nil
	}
	return succeeded(string(output)), nil
}
