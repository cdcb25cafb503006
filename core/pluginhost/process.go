package pluginhost

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
)

// shutdownTimeout bounds the Shutdown RPC, as go-plugin bounds its own
// graceful exit.
const shutdownTimeout = 2 * time.Second

// Identity is what a plugin process says it is.
type Identity struct {
	Kind          string
	Name          string
	PluginVersion string
	APIVersions   []string
}

// process is one running plugin process, from a successful launch until it
// is stopped.
type process struct {
	spec         resolvedSpec
	digest       string // sha256 of the binary it runs, once known; see runningDigest
	client       *plugin.Client
	runner       *processRunner
	conn         *grpc.ClientConn
	broker       *plugin.GRPCBroker // serves the host service to the process
	exited       <-chan struct{}    // closed when the process has exited (and been reaped)
	identity     Identity
	apiVersion   string
	capabilities []string
	pid          int
	started      time.Time

	// done is closed when the process is retired or has died: holders of
	// long-lived streams re-Acquire on it.
	done     chan struct{}
	doneOnce sync.Once

	mu       sync.Mutex
	inflight int
	retiring bool
	drained  chan struct{} // closed when retiring and no call is in flight

	// killedBecause is set when the host killed the process (hung).
	killedBecause atomic.Pointer[string]

	// checkNow asks watchHealth for a check before its next tick.
	checkNow chan struct{}
}

func newProcess() *process {
	return &process{done: make(chan struct{}), drained: make(chan struct{}), checkNow: make(chan struct{}, 1)}
}

// suspect asks for a health check at once: a call ran out of time, which a
// hung process does, so the check need not wait for its period.
func (pr *process) suspect() {
	select {
	case pr.checkNow <- struct{}{}:
	default:
	}
}

// lease counts a call in; false once the process is retiring.
func (pr *process) lease() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.retiring {
		return false
	}
	pr.inflight++
	return true
}

func (pr *process) release() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.inflight--
	if pr.retiring && pr.inflight == 0 {
		close(pr.drained)
	}
}

func (pr *process) closeDone() { pr.doneOnce.Do(func() { close(pr.done) }) }

// retire stops new leases, closes done, and waits until the calls in flight
// have finished or the process has exited, at most timeout or until abort is
// closed. It returns false if calls were still in flight when it gave up.
func (pr *process) retire(timeout time.Duration, abort <-chan struct{}) bool {
	pr.mu.Lock()
	if !pr.retiring {
		pr.retiring = true
		if pr.inflight == 0 {
			close(pr.drained)
		}
	}
	pr.mu.Unlock()
	pr.closeDone()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-pr.drained:
		return true
	case <-pr.exited:
		return true
	case <-timer.C:
	case <-abort:
	}
	return false
}

func (pr *process) hasExited() bool {
	select {
	case <-pr.exited:
		return true
	default:
		return false
	}
}

// runningDigest is the sha256 of the binary the process runs. A pinned
// binary's is known from the launch; an unpinned one is hashed on first need
// (a change to judge), keeping the hash off the launch path. Only the slot's
// supervisor calls it.
func (pr *process) runningDigest() (string, error) {
	if pr.digest != "" {
		return pr.digest, nil
	}
	exe, err := pr.runner.openExecutable()
	if err != nil {
		return "", err
	}
	defer exe.Close()
	if pr.digest, err = contentSHA256(exe); err != nil {
		return "", fmt.Errorf("hash the executable of plugin process %d: %w", pr.pid, err)
	}
	return pr.digest, nil
}

// exitReason says why the process ended.
func (pr *process) exitReason() string {
	if why := pr.killedBecause.Load(); why != nil {
		return *why
	}
	if status := pr.runner.exitStatus(); status != "" {
		return status
	}
	return "exited"
}

// kill SIGKILLs the process group for reason, without asking the process
// anything: a hung process would block a Shutdown RPC.
func (pr *process) kill(reason string) error {
	pr.killedBecause.CompareAndSwap(nil, &reason)
	return pr.runner.killGroup()
}

// stop asks the process to shut down and ends it, in at most about
// shutdownTimeout plus go-plugin's own grace, and at once if ctx ends.
func (pr *process) stop(ctx context.Context) {
	pr.closeDone()
	if !pr.hasExited() {
		sctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
		_, err := basev1.NewPluginServiceClient(pr.conn).Shutdown(sctx, &basev1.ShutdownRequest{})
		cancel()
		if err != nil && !pr.hasExited() {
			// Unresponsive: go-plugin's Kill would block in its own Shutdown RPC.
			pr.kill(fmt.Sprintf("stopped: Shutdown failed: %v", err))
		}
	}
	killed := make(chan struct{})
	go func() {
		pr.client.Kill()
		close(killed)
	}()
	grace := time.NewTimer(shutdownTimeout + time.Second)
	defer grace.Stop()
	select {
	case <-killed:
		return
	case <-grace.C:
	case <-ctx.Done():
	}
	pr.kill("stopped: did not exit after Shutdown")
	select {
	case <-killed:
	case <-pr.exited:
		// Gone. go-plugin's Kill returns once the process's pipes close,
		// which a descendant that left its group may delay.
	}
}

// checkHealth asks the process's gRPC health service (the service go-plugin
// registers as "plugin") whether it serves, waiting at most timeout.
func (pr *process) checkHealth(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := grpc_health_v1.NewHealthClient(pr.conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
	if err != nil {
		return err
	}
	if resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return fmt.Errorf("health status %s", resp.GetStatus())
	}
	return nil
}

// watchHealth checks the process's health every interval, and at once
// when a call suspects it (suspect). A failed check is repeated after
// timeout rather than interval, so that a hung process is declared so
// within a few seconds of the first sign whatever the interval. After
// failures failed checks in a row it calls onHung and returns; it also
// returns when the process is retired or dies.
func (pr *process) watchHealth(interval, timeout time.Duration, failures int, onHung func(err error, sinceHealthy time.Duration)) {
	timer := time.NewTimer(interval)
	defer timer.Stop()
	lastHealthy := time.Now()
	failed := 0
	for {
		select {
		case <-pr.done:
			return
		case <-timer.C:
		case <-pr.checkNow:
			timer.Stop()
		}
		err := pr.checkHealth(context.Background(), timeout)
		if err == nil {
			failed = 0
			lastHealthy = time.Now()
			timer.Reset(interval)
			continue
		}
		if pr.hasExited() {
			return
		}
		failed++
		if failed >= failures {
			onHung(fmt.Errorf("%d health checks in a row failed, the last with: %w", failed, err), time.Since(lastHealthy))
			return
		}
		timer.Reset(min(interval, timeout))
	}
}
