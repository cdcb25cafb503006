// Package handler runs one probe attempt against a container, as the
// kubelet's pkg/kubelet/prober/prober.go and pkg/probe/{exec,http,tcp,grpc}
// do: exec through the core's host service (CRI ExecSync), httpGet,
// tcpSocket and grpc from the plugin's own network namespace, the node's.
// An attempt that errors (rather than fails) is tried again, up to
// upstream's maxProbeRetries times in all.
package handler

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/microlet/microlet/plugins/probes/decide"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const (
	// maxProbeRetries is how many times in all an attempt that errors is
	// made (upstream's maxProbeRetries).
	maxProbeRetries = 3

	// maxOutputLength bounds what is kept of a response body or a
	// command's output (upstream's maxRespBodyLength and maxReadLength).
	maxOutputLength = 10 << 10
)

// Execer runs a command in a container and waits for it: the core's host
// service (*sdk.Host).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*hostv1.ExecSyncResponse, error)
}

// Target is the container instance a probe checks.
type Target struct {
	ContainerID string
	// PodIP is the host of httpGet and tcpSocket probes that name none,
	// and of grpc probes.
	PodIP string
	// Ports resolve ports given by name.
	Ports []*typesv1.ContainerPort
}

// Outcome is what one attempt found.
type Outcome struct {
	// Result is RESULT_SUCCESS, RESULT_FAILURE, or RESULT_UNKNOWN when the
	// attempt could not run (an error, not a failure).
	Result probesv1.Result
	// Output is what the handler reported: a response body, a command's
	// output, why it failed, or the error.
	Output string
	// Warning marks a success that deserves a warning: an HTTP redirect to
	// another host, not followed.
	Warning bool
}

// Runner runs probe attempts. It is safe for concurrent use.
type Runner struct {
	exec      Execer
	transport *http.Transport
}

// NewRunner returns a Runner that runs exec probes through exec.
func NewRunner(exec Execer) *Runner {
	return &Runner{exec: exec, transport: newHTTPTransport()}
}

// outcome is one try: upstream's (probe.Result, output, error).
type outcome struct {
	result  probesv1.Result
	output  string
	warning bool
}

// Run makes one attempt of probe p against t, trying again while it errors.
func (r *Runner) Run(ctx context.Context, p *probesv1.Probe, t Target) Outcome {
	var err error
	for range maxProbeRetries {
		var o outcome
		if o, err = r.try(ctx, p, t); err == nil {
			return Outcome{Result: o.result, Output: o.output, Warning: o.warning}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return Outcome{Result: probesv1.Result_RESULT_UNKNOWN, Output: err.Error()}
}

func (r *Runner) try(ctx context.Context, p *probesv1.Probe, t Target) (outcome, error) {
	timeout := decide.Timeout(p)
	switch h := p.GetHandler().(type) {
	case *probesv1.Probe_Exec:
		return r.execProbe(ctx, h.Exec, t, timeout)
	case *probesv1.Probe_HttpGet:
		return r.httpProbe(ctx, h.HttpGet, t, timeout)
	case *probesv1.Probe_TcpSocket:
		return tcpProbe(ctx, h.TcpSocket, t, timeout)
	case *probesv1.Probe_Grpc:
		return grpcProbe(ctx, h.Grpc, t, timeout)
	}
	return outcome{}, fmt.Errorf("missing probe handler for container %s", t.ContainerID)
}

// failed and succeeded are the outcomes of tries that ran.
func failed(output string) outcome {
	return outcome{result: probesv1.Result_RESULT_FAILURE, output: output}
}
func succeeded(output string) outcome {
	return outcome{result: probesv1.Result_RESULT_SUCCESS, output: output}
}
