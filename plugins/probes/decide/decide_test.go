package decide

import (
	"slices"
	"testing"
	"time"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

const (
	liveness  = probesv1.ProbeType_PROBE_TYPE_LIVENESS
	readiness = probesv1.ProbeType_PROBE_TYPE_READINESS
	startup   = probesv1.ProbeType_PROBE_TYPE_STARTUP

	none    = probesv1.Result_RESULT_UNSPECIFIED
	success = probesv1.Result_RESULT_SUCCESS
	failure = probesv1.Result_RESULT_FAILURE
	unknown = probesv1.Result_RESULT_UNKNOWN
)

func probe(successThreshold, failureThreshold int32) *probesv1.Probe {
	return &probesv1.Probe{
		Handler:          &probesv1.Probe_TcpSocket{TcpSocket: &probesv1.TCPSocketAction{Port: 80}},
		TimeoutSeconds:   1,
		PeriodSeconds:    10,
		SuccessThreshold: successThreshold,
		FailureThreshold: failureThreshold,
	}
}

func TestInitialVerdict(t *testing.T) {
	for _, c := range []struct {
		kind probesv1.ProbeType
		want probesv1.Result
	}{
		{readiness, failure},
		{liveness, success},
		{startup, unknown},
	} {
		if got := InitialVerdict(c.kind); got != c.want {
			t.Errorf("InitialVerdict(%v) = %v, want %v", c.kind, got, c.want)
		}
		if got := NewWorker(c.kind, probe(1, 3)).Verdict(); got != c.want {
			t.Errorf("NewWorker(%v).Verdict() = %v, want %v", c.kind, got, c.want)
		}
	}
}

// Record turns attempts into verdicts through the thresholds, one table row
// per sequence of attempts: settled is what each attempt settles, verdict
// the standing verdict after the last one, hold whether probing stopped.
func TestRecord(t *testing.T) {
	for _, c := range []struct {
		name     string
		kind     probesv1.ProbeType
		success  int32
		failure  int32
		attempts []probesv1.Result
		settled  []probesv1.Result
		verdict  probesv1.Result
		hold     bool
	}{
		{
			name: "readiness succeeds at once with successThreshold 1",
			kind: readiness, success: 1, failure: 3,
			attempts: []probesv1.Result{success, success},
			settled:  []probesv1.Result{success, success},
			verdict:  success,
		},
		{
			name: "readiness needs successThreshold successes in a row",
			kind: readiness, success: 3, failure: 3,
			attempts: []probesv1.Result{success, success, failure, success, success, success},
			settled:  []probesv1.Result{none, none, none, none, none, success},
			verdict:  success,
		},
		{
			name: "readiness turns failed after failureThreshold failures and keeps probing",
			kind: readiness, success: 1, failure: 2,
			attempts: []probesv1.Result{success, failure, failure, failure, success},
			settled:  []probesv1.Result{success, none, failure, failure, success},
			verdict:  success,
		},
		{
			name: "attempts that could not run neither count nor break a run",
			kind: readiness, success: 1, failure: 3,
			attempts: []probesv1.Result{failure, unknown, failure, unknown, failure},
			settled:  []probesv1.Result{none, none, none, none, failure},
			verdict:  failure,
		},
		{
			name: "liveness failure below the threshold leaves it succeeded",
			kind: liveness, success: 1, failure: 3,
			attempts: []probesv1.Result{failure, failure, success, failure},
			settled:  []probesv1.Result{none, none, success, none},
			verdict:  success,
		},
		{
			name: "liveness failure at the threshold settles and holds",
			kind: liveness, success: 1, failure: 3,
			attempts: []probesv1.Result{failure, failure, failure},
			settled:  []probesv1.Result{none, none, failure},
			verdict:  failure,
			hold:     true,
		},
		{
			name: "liveness success does not hold",
			kind: liveness, success: 1, failure: 1,
			attempts: []probesv1.Result{success},
			settled:  []probesv1.Result{success},
			verdict:  success,
		},
		{
			name: "startup success settles and stops the startup probe",
			kind: startup, success: 1, failure: 30,
			attempts: []probesv1.Result{failure, failure, success},
			settled:  []probesv1.Result{none, none, success},
			verdict:  success,
			hold:     true,
		},
		{
			name: "startup failure at the threshold settles and holds",
			kind: startup, success: 1, failure: 2,
			attempts: []probesv1.Result{failure, failure},
			settled:  []probesv1.Result{none, failure},
			verdict:  failure,
			hold:     true,
		},
		{
			name: "unknown before any verdict keeps the initial one",
			kind: startup, success: 1, failure: 3,
			attempts: []probesv1.Result{unknown, unknown, unknown},
			settled:  []probesv1.Result{none, none, none},
			verdict:  unknown,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := NewWorker(c.kind, probe(c.success, c.failure))
			var settled []probesv1.Result
			for _, a := range c.attempts {
				settled = append(settled, w.Record(a))
			}
			if !slices.Equal(settled, c.settled) {
				t.Errorf("settled %v, want %v", settled, c.settled)
			}
			if w.Verdict() != c.verdict {
				t.Errorf("verdict %v, want %v", w.Verdict(), c.verdict)
			}
			start := time.Unix(1000, 0)
			probing := w.ShouldProbe(start.Add(time.Hour), start, c.kind != startup)
			if probing == c.hold {
				t.Errorf("ShouldProbe after the attempts = %v, want %v (on hold: %v)", probing, !c.hold, c.hold)
			}
		})
	}
}

func TestShouldProbe(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		name    string
		kind    probesv1.ProbeType
		delay   int32
		elapsed time.Duration
		started bool
		want    bool
	}{
		{"readiness of a started container", readiness, 0, 0, true, true},
		{"readiness waits for the startup probe", readiness, 0, time.Hour, false, false},
		{"liveness waits for the startup probe", liveness, 0, time.Hour, false, false},
		{"startup runs until started", startup, 0, 0, false, true},
		{"startup stops once started", startup, 0, time.Hour, true, false},
		{"initial delay not yet over", liveness, 10, 9 * time.Second, true, false},
		{"initial delay counts whole seconds", liveness, 10, 9*time.Second + 999*time.Millisecond, true, false},
		{"initial delay over", liveness, 10, 10 * time.Second, true, true},
		{"initial delay applies to startup too", startup, 5, 4 * time.Second, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := probe(1, 3)
			p.InitialDelaySeconds = c.delay
			if got := NewWorker(c.kind, p).ShouldProbe(start.Add(c.elapsed), start, c.started); got != c.want {
				t.Errorf("ShouldProbe = %v, want %v", got, c.want)
			}
		})
	}
}

func TestStarted(t *testing.T) {
	if !Started(nil) {
		t.Error("a container without a startup probe has not started")
	}
	w := NewWorker(startup, probe(1, 1))
	if Started(w) {
		t.Error("started before the startup probe succeeded")
	}
	w.Record(success)
	if !Started(w) {
		t.Error("not started after the startup probe succeeded")
	}
	failed := NewWorker(startup, probe(1, 1))
	failed.Record(failure)
	if Started(failed) {
		t.Error("started after the startup probe failed")
	}
}

func TestFirstRunDelay(t *testing.T) {
	for _, c := range []struct {
		name       string
		period, up time.Duration
		random     float64
		want       time.Duration
	}{
		{"plugin just started: a random part of the period", 10 * time.Second, time.Second, 0.25, 2500 * time.Millisecond},
		{"plugin just started, random 0", 10 * time.Second, 0, 0, 0},
		{"plugin up for a period: at once", 10 * time.Second, 10 * time.Second, 0.9, 0},
		{"plugin up for longer: at once", 10 * time.Second, time.Hour, 0.9, 0},
	} {
		if got := FirstRunDelay(c.period, c.up, c.random); got != c.want {
			t.Errorf("%s: FirstRunDelay = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	grace := func(s int64) *int64 { return &s }
	valid := func() *probesv1.Probe { return probe(1, 3) }
	with := func(change func(*probesv1.Probe)) *probesv1.Probe {
		p := valid()
		change(p)
		return p
	}
	for _, c := range []struct {
		name  string
		c     *probesv1.ContainerProbes
		wants []string
	}{
		{
			name: "valid probes of every kind",
			c: &probesv1.ContainerProbes{
				ContainerId: "c1",
				Liveness: with(func(p *probesv1.Probe) {
					p.Handler = &probesv1.Probe_Exec{Exec: &probesv1.ExecAction{Command: []string{"true"}}}
					p.TerminationGracePeriodSeconds = grace(5)
				}),
				Readiness: with(func(p *probesv1.Probe) {
					p.Handler = &probesv1.Probe_HttpGet{HttpGet: &probesv1.HTTPGetAction{PortName: "http", Scheme: "HTTPS"}}
					p.SuccessThreshold = 3
				}),
				Startup: with(func(p *probesv1.Probe) {
					p.Handler = &probesv1.Probe_Grpc{Grpc: &probesv1.GRPCAction{Port: 9090}}
				}),
			},
		},
		{
			name:  "no container ID",
			c:     &probesv1.ContainerProbes{Readiness: valid()},
			wants: []string{"container_id: must not be empty"},
		},
		{
			name: "timing fields without defaults",
			c: &probesv1.ContainerProbes{ContainerId: "c1", Readiness: with(func(p *probesv1.Probe) {
				p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = -1, 0, 0, 0, 0
			})},
			wants: []string{
				"readiness.initial_delay_seconds: must be at least 0, got -1",
				"readiness.timeout_seconds: must be at least 1, got 0",
				"readiness.period_seconds: must be at least 1, got 0",
				"readiness.success_threshold: must be at least 1, got 0",
				"readiness.failure_threshold: must be at least 1, got 0",
			},
		},
		{
			name:  "liveness success threshold above 1",
			c:     &probesv1.ContainerProbes{ContainerId: "c1", Liveness: probe(2, 3)},
			wants: []string{"liveness.success_threshold: must be 1 for liveness probes, got 2"},
		},
		{
			name:  "startup success threshold above 1",
			c:     &probesv1.ContainerProbes{ContainerId: "c1", Startup: probe(2, 3)},
			wants: []string{"startup.success_threshold: must be 1 for startup probes, got 2"},
		},
		{
			name: "grace period on readiness, and not positive on liveness",
			c: &probesv1.ContainerProbes{ContainerId: "c1",
				Readiness: with(func(p *probesv1.Probe) { p.TerminationGracePeriodSeconds = grace(5) }),
				Liveness:  with(func(p *probesv1.Probe) { p.TerminationGracePeriodSeconds = grace(0) }),
			},
			wants: []string{
				"readiness.termination_grace_period_seconds: must not be set for readiness probes",
				"liveness.termination_grace_period_seconds: must be greater than 0, got 0",
			},
		},
		{
			name: "bad handlers",
			c: &probesv1.ContainerProbes{ContainerId: "c1",
				Startup: with(func(p *probesv1.Probe) { p.Handler = &probesv1.Probe_Exec{Exec: &probesv1.ExecAction{}} }),
				Readiness: with(func(p *probesv1.Probe) {
					p.Handler = &probesv1.Probe_HttpGet{HttpGet: &probesv1.HTTPGetAction{Scheme: "ftp", Port: 70000}}
				}),
				Liveness: with(func(p *probesv1.Probe) { p.Handler = nil }),
			},
			wants: []string{
				"startup.exec.command: must not be empty",
				`readiness.http_get.scheme: expected HTTP or HTTPS, got "ftp"`,
				"readiness.http_get.port: expected a port number from 1 to 65535 or a port name, got 70000",
				"liveness.handler: expected one of exec, http_get, tcp_socket or grpc, got none",
			},
		},
		{
			name: "tcp port given twice, grpc port missing",
			c: &probesv1.ContainerProbes{ContainerId: "c1",
				Readiness: with(func(p *probesv1.Probe) {
					p.Handler = &probesv1.Probe_TcpSocket{TcpSocket: &probesv1.TCPSocketAction{Port: 80, PortName: "http"}}
				}),
				Liveness: with(func(p *probesv1.Probe) { p.Handler = &probesv1.Probe_Grpc{Grpc: &probesv1.GRPCAction{}} }),
			},
			wants: []string{
				`readiness.tcp_socket.port: expected a port number or a port name, got both (80 and "http")`,
				"liveness.grpc.port: expected a port number from 1 to 65535, got 0",
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Validate(c.c)
			if !slices.Equal(got, c.wants) {
				t.Errorf("Validate =\n  %q\nwant\n  %q", got, c.wants)
			}
		})
	}
}
