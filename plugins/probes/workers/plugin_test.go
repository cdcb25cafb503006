package workers

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

var (
	_ sdk.Plugin[Config] = (*Plugin)(nil)
	_ sdk.Prober         = (*Plugin)(nil)
	_ sdk.Shutdowner     = (*Plugin)(nil)
)

func TestConfigureNeedsTheHostService(t *testing.T) {
	t.Parallel()
	h := sdktest.InProcess(t, Info, New())
	if err := h.Configure(map[string]any{}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "needs the core's host service") {
		t.Errorf("Configure without a host service = %v; want INVALID_ARGUMENT saying the host service is needed", err)
	}
	if errs, err := h.ValidateConfig(map[string]any{"period": "1s"}); err != nil || len(errs) != 1 || errs[0].Path != "period" {
		t.Errorf("ValidateConfig with a key = %v, %v; want the key refused: the block has none", errs, err)
	}
}

func TestInvalidProbesAreRefused(t *testing.T) {
	t.Parallel()
	port := target(t)
	h := serve(t, newFakeHost(nil))
	client := h.Probes()
	w := openWatch(t, client)

	bad := containerProbes("bad", port)
	bad.Liveness = httpProbe(port)
	bad.Liveness.PeriodSeconds = 0
	_, err := client.SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: bad})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "liveness.period_seconds: must be at least 1, got 0") {
		t.Errorf("SetContainerProbes with period 0 = %v; want INVALID_ARGUMENT naming liveness.period_seconds", err)
	}

	good := containerProbes("good", port)
	good.Readiness = httpProbe(port)
	stream, err := client.SyncProbes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*probesv1.ContainerProbes{bad, good} {
		if err := stream.Send(&probesv1.SyncProbesRequest{Container: c}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = stream.CloseAndRecv()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "refused 1 of 2 containers, and probes the others: container bad: liveness.period_seconds") {
		t.Errorf("SyncProbes with one bad container = %v; want INVALID_ARGUMENT naming it", err)
	}
	w.next(t, "the valid container's readiness", of("good", readiness, success))
}

// An HTTP readiness probe and a TCP liveness probe of a running container
// report every attempt, with what the core needs to account for it.
func TestResultsOfAttempts(t *testing.T) {
	t.Parallel()
	port := target(t)
	h := serve(t, newFakeHost(nil))
	w := openWatch(t, h.Probes())
	c := containerProbes("c1", port)
	c.Readiness = httpProbe(port)
	c.Liveness = probe(&probesv1.TCPSocketAction{Port: port}, 3)
	if _, err := h.Probes().SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []probesv1.ProbeType{readiness, liveness} {
		seen := w.next(t, kind.String(), of("c1", kind, success))
		r := seen[len(seen)-1]
		if r.GetPodUid() != "uid-1" || r.GetContainerName() != "app-c1" || r.GetAttempt() != success ||
			r.GetTime() == nil || r.GetDuration() == nil || r.TerminationGracePeriodSeconds != nil {
			t.Errorf("%v result = %v; want pod uid-1, container app-c1, a successful attempt with its time and duration", kind, r)
		}
	}
}

// Liveness and readiness wait for the startup probe, which stops once it
// has succeeded.
func TestStartupGatesTheOthers(t *testing.T) {
	t.Parallel()
	port := target(t)
	host := newFakeHost(map[string][]int32{"c1": {1, 1, 0}})
	h := serve(t, host)
	w := openWatch(t, h.Probes())
	c := containerProbes("c1", port)
	c.Startup = execProbe(10)
	c.Readiness = httpProbe(port)
	c.Liveness = probe(&probesv1.TCPSocketAction{Port: port}, 3)
	if _, err := h.Probes().SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
		t.Fatal(err)
	}

	var startupSettled []probesv1.Result
	for _, r := range w.next(t, "the startup probe's success", of("c1", startup, success)) {
		if r.GetProbeType() != startup {
			t.Errorf("a %v result before the startup probe succeeded: %v", r.GetProbeType(), r)
		}
		startupSettled = append(startupSettled, r.GetResult())
	}
	if want := []probesv1.Result{none, none, success}; !slices.Equal(startupSettled, want) {
		t.Errorf("the startup probe settled %v, want %v", startupSettled, want)
	}
	w.next(t, "liveness once started", of("c1", liveness, success))
	// Two more readiness periods: a startup probe still running would have
	// run again in them.
	for range 3 {
		w.next(t, "readiness once started", of("c1", readiness, success))
	}
	if n := host.execCalls("c1"); n != 3 {
		t.Errorf("the startup probe ran %d times, want 3: it stops once it has succeeded", n)
	}
}

// A failed liveness probe reports the probe's grace period and stops
// probing: the container is about to be replaced.
func TestFailedLivenessHolds(t *testing.T) {
	t.Parallel()
	port := target(t)
	host := newFakeHost(map[string][]int32{"c1": {1}})
	h := serve(t, host)
	w := openWatch(t, h.Probes())
	c := containerProbes("c1", port)
	grace := int64(7)
	c.Liveness = execProbe(2)
	c.Liveness.TerminationGracePeriodSeconds = &grace
	c.Readiness = httpProbe(port)
	if _, err := h.Probes().SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
		t.Fatal(err)
	}

	var livenessSettled []probesv1.Result
	for _, r := range w.next(t, "the liveness failure", of("c1", liveness, failure)) {
		if r.GetProbeType() == liveness {
			livenessSettled = append(livenessSettled, r.GetResult())
		}
	}
	if want := []probesv1.Result{none, failure}; !slices.Equal(livenessSettled, want) {
		t.Errorf("the liveness probe settled %v, want %v (failure threshold 2)", livenessSettled, want)
	}
	// The result is read again through a new watch, as the standing verdict.
	r := openWatch(t, h.Probes()).next(t, "the standing liveness verdict", of("c1", liveness, failure))
	if last := r[len(r)-1]; last.GetMessage() != "exit 1" || last.GetTerminationGracePeriodSeconds() != grace {
		t.Errorf("liveness failure = %v; want the output exit 1 and grace period %d", last, grace)
	}
	// Two more readiness periods: a liveness probe still running would have
	// run again in them.
	for range 3 {
		w.next(t, "readiness", of("c1", readiness, success))
	}
	if n := host.execCalls("c1"); n != 2 {
		t.Errorf("the liveness probe ran %d times, want 2: it stops once it has failed", n)
	}
}

// A watch opened later first gets every standing verdict, as a
// restatement that is no attempt; removed and replaced containers have
// none.
func TestWatchRestatesStandingVerdicts(t *testing.T) {
	t.Parallel()
	port := target(t)
	h := serve(t, newFakeHost(nil))
	client := h.Probes()
	first := openWatch(t, client)
	for _, id := range []string{"kept", "removed"} {
		c := containerProbes(id, port)
		c.Readiness = httpProbe(port)
		if _, err := client.SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
			t.Fatal(err)
		}
		first.next(t, id+" ready", of(id, readiness, success))
	}
	if _, err := client.RemoveContainerProbes(t.Context(), &probesv1.RemoveContainerProbesRequest{ContainerId: "removed"}); err != nil {
		t.Fatal(err)
	}

	second := openWatch(t, client)
	r := second.next(t, "a restatement", func(*probesv1.ProbeResult) bool { return true })[0]
	if r.GetContainerId() != "kept" || r.GetResult() != success || r.GetAttempt() != none || r.GetDuration() != nil {
		t.Errorf("first result of a new watch = %v; want kept's standing success, attempt unspecified, no duration", r)
	}

	// SyncProbes replaces the set: "kept" goes, "synced" comes.
	synced := containerProbes("synced", port)
	synced.Readiness = httpProbe(port)
	stream, err := client.SyncProbes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&probesv1.SyncProbesRequest{Container: synced}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	second.next(t, "synced ready", of("synced", readiness, success))
	third := openWatch(t, client)
	if r := third.next(t, "a restatement", func(*probesv1.ProbeResult) bool { return true })[0]; r.GetContainerId() != "synced" || r.GetAttempt() != none {
		t.Errorf("first result of a watch after SyncProbes = %v; want synced's restatement, kept's verdict gone", r)
	}
}

// The binary an operator installs, launched as the core launches it.
func TestBinary(t *testing.T) {
	t.Parallel()
	port := target(t)
	h := sdktest.Subprocess(t, sdktest.BuildAs(t, "github.com/microlet/microlet/plugins/cmd/microlet-plugins", "microlet-probes-default"), sdktest.WithHostService(newFakeHost(map[string][]int32{"c1": {0}})))
	if id := h.Identity(); id.GetKind() != sdk.KindProbes || id.GetName() != "default" {
		t.Fatalf("GetIdentity = %v", id)
	}
	if err := h.Configure(map[string]any{}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	w := openWatch(t, h.Probes())
	c := containerProbes("c1", port)
	c.Readiness = httpProbe(port)
	c.Liveness = execProbe(3)
	if _, err := h.Probes().SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
		t.Fatal(err)
	}
	w.next(t, "readiness", of("c1", readiness, success))
	w.next(t, "liveness through the host's ExecSync", of("c1", liveness, success))
}

// SetContainerProbes on a probed container keeps the workers of probes
// that did not change, and a dropped startup probe lets the others run.
func TestSetKeepsUnchangedProbes(t *testing.T) {
	t.Parallel()
	port := target(t)
	h := serve(t, newFakeHost(map[string][]int32{"c1": {1}}))
	client := h.Probes()
	set := func(c *probesv1.ContainerProbes) {
		t.Helper()
		if _, err := client.SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
			t.Fatal(err)
		}
	}
	w := openWatch(t, client)

	c := containerProbes("c1", port)
	c.Startup = execProbe(1000) // never succeeds
	c.Readiness = httpProbe(port)
	set(c)
	w.next(t, "a startup attempt", func(r *probesv1.ProbeResult) bool { return r.GetProbeType() == startup })

	// The core drops the startup probe of a container it knows has started.
	c.Startup = nil
	set(c)
	w.next(t, "readiness once the startup probe is dropped", of("c1", readiness, success))

	// Adding a liveness probe leaves the readiness worker, and its standing
	// verdict, as they were: a new watch restates it at once.
	c.Liveness = probe(&probesv1.TCPSocketAction{Port: port}, 3)
	set(c)
	for _, r := range openWatch(t, client).next(t, "readiness", func(r *probesv1.ProbeResult) bool { return r.GetProbeType() == readiness }) {
		if r.GetAttempt() != none {
			t.Errorf("result %v before readiness's restatement; want the standing verdicts first", r)
		}
	}
}
