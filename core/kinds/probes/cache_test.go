package probes

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/durationpb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/runtime/container"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// The runtime manager asks the prober about probe verdicts.
var _ podruntime.ProbeResults = (*Manager)(nil)

// idleSlot is a plugin slot for tests that never run a session.
type idleSlot struct{}

func (idleSlot) Acquire(context.Context) (*pluginhost.Lease, error) {
	return nil, pluginhost.ErrUnavailable
}

const (
	wireLiveness  = probesv1.ProbeType_PROBE_TYPE_LIVENESS
	wireReadiness = probesv1.ProbeType_PROBE_TYPE_READINESS
	wireStartup   = probesv1.ProbeType_PROBE_TYPE_STARTUP

	settledNone    = probesv1.Result_RESULT_UNSPECIFIED
	settledSuccess = probesv1.Result_RESULT_SUCCESS
	settledFailure = probesv1.Result_RESULT_FAILURE
)

// report is a result of a probe of container app-1.
func report(t probesv1.ProbeType, settled, attempt probesv1.Result) *probesv1.ProbeResult {
	return &probesv1.ProbeResult{PodUid: "uid-1", ContainerName: "app", ContainerId: "app-1", ProbeType: t, Result: settled, Attempt: attempt,
		Duration: durationpb.New(20 * time.Millisecond)}
}

func withGrace(r *probesv1.ProbeResult, grace int64) *probesv1.ProbeResult {
	r.TerminationGracePeriodSeconds = &grace
	return r
}

type answers struct {
	restart bool
	message string
	grace   int64 // 0: none
	started bool
	ready   bool
	known   bool
}

// What the cache answers after the plugin's results, and which updates it
// sends.
func TestVerdicts(t *testing.T) {
	app := func(liveness, readiness, startup *v1.Probe) v1.Container {
		return v1.Container{Name: "app", Image: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 80}},
			LivenessProbe: liveness, ReadinessProbe: readiness, StartupProbe: startup}
	}
	for _, c := range []struct {
		name     string
		noPlugin bool
		deleted  bool
		app      v1.Container
		results  []*probesv1.ProbeResult
		want     answers
		updates  []Update
	}{
		{
			name: "no probes: started and ready",
			app:  app(nil, nil, nil),
			want: answers{started: true, ready: true, known: true},
		},
		{
			name: "readiness starts failed",
			app:  app(nil, httpReadiness(), nil),
			want: answers{started: true, known: true},
		},
		{
			name:    "readiness succeeds",
			app:     app(nil, httpReadiness(), nil),
			results: []*probesv1.ProbeResult{report(wireReadiness, settledSuccess, settledSuccess)},
			want:    answers{started: true, ready: true, known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success}},
		},
		{
			name: "an attempt below the threshold settles nothing",
			app:  app(nil, httpReadiness(), nil),
			results: []*probesv1.ProbeResult{
				report(wireReadiness, settledSuccess, settledSuccess),
				report(wireReadiness, settledNone, settledFailure),
			},
			want:    answers{started: true, ready: true, known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success}},
		},
		{
			name: "readiness back and forth; a repeated verdict is no update",
			app:  app(nil, httpReadiness(), nil),
			results: []*probesv1.ProbeResult{
				report(wireReadiness, settledSuccess, settledSuccess),
				report(wireReadiness, settledSuccess, settledSuccess),
				report(wireReadiness, settledFailure, settledFailure),
			},
			want: answers{started: true, known: true},
			updates: []Update{
				{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success},
				{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Failure},
			},
		},
		{
			name: "a startup probe holds readiness back",
			app:  app(nil, httpReadiness(), execProbe("true")),
			results: []*probesv1.ProbeResult{
				report(wireReadiness, settledSuccess, settledSuccess),
			},
			want:    answers{known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success}},
		},
		{
			name: "started once the startup probe succeeds",
			app:  app(nil, httpReadiness(), execProbe("true")),
			results: []*probesv1.ProbeResult{
				report(wireStartup, settledSuccess, settledSuccess),
				report(wireReadiness, settledSuccess, settledSuccess),
			},
			want: answers{started: true, ready: true, known: true},
			updates: []Update{
				{PodUID: "uid-1", ContainerID: "app-1", Type: Startup, Result: Success},
				{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success},
			},
		},
		{
			name:    "a failed liveness probe restarts, with its grace period",
			app:     app(execProbe("true"), nil, nil),
			results: []*probesv1.ProbeResult{withGrace(report(wireLiveness, settledFailure, settledFailure), 7)},
			want:    answers{restart: true, message: "Container app failed liveness probe", grace: 7, started: true, ready: true, known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Liveness, Result: Failure}},
		},
		{
			name:    "a failed startup probe restarts",
			app:     app(execProbe("true"), nil, execProbe("true")),
			results: []*probesv1.ProbeResult{report(wireStartup, settledFailure, settledFailure)},
			want:    answers{restart: true, message: "Container app failed startup probe", known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Startup, Result: Failure}},
		},
		{
			name: "a restated verdict counts like a settled one",
			app:  app(nil, httpReadiness(), nil),
			results: []*probesv1.ProbeResult{
				report(wireReadiness, settledSuccess, settledNone),
			},
			want:    answers{started: true, ready: true, known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success}},
		},
		{
			name:    "a result of a probe the container does not have is ignored",
			app:     app(nil, httpReadiness(), nil),
			results: []*probesv1.ProbeResult{report(wireLiveness, settledFailure, settledFailure)},
			want:    answers{started: true, known: true},
		},
		{
			name:    "a pod being deleted is not restarted by its liveness probe",
			deleted: true,
			app:     app(execProbe("true"), httpReadiness(), execProbe("true")),
			results: []*probesv1.ProbeResult{
				report(wireLiveness, settledFailure, settledFailure),
				report(wireReadiness, settledSuccess, settledSuccess),
			},
			want:    answers{started: true, ready: true, known: true},
			updates: []Update{{PodUID: "uid-1", ContainerID: "app-1", Type: Readiness, Result: Success}},
		},
		{
			name:     "without a plugin: no probes",
			noPlugin: true,
			app:      app(execProbe("true"), httpReadiness(), execProbe("true")),
			want:     answers{started: true, ready: true, known: true},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Plugin: idleSlot{}}
			if c.noPlugin {
				opts.Plugin = nil
			}
			m := newManager(t, opts)
			pod := newPod("1", c.app)
			if c.deleted {
				pod.DeletionTimestamp = &metav1.Time{Time: containerStart}
			}
			m.UpdatePod(pod, runtimeOf(pod, "app"))
			for _, r := range c.results {
				m.apply(t.Context(), r)
			}
			restart, message, grace := m.ShouldRestart("app-1")
			ready, known := m.Ready("app-1")
			got := answers{restart: restart, message: message, started: m.Started("app-1"), ready: ready, known: known}
			if grace != nil {
				got.grace = *grace
			}
			if got != c.want {
				t.Errorf("answers %+v, want %+v", got, c.want)
			}
			var updates []Update
			for len(m.Updates()) > 0 {
				updates = append(updates, <-m.Updates())
			}
			if !slices.Equal(updates, c.updates) {
				t.Errorf("updates %v, want %v", updates, c.updates)
			}
		})
	}
}

// Instances come and go with the runtime status; verdicts belong to one
// instance.
func TestInstancesComeAndGo(t *testing.T) {
	m := newManager(t, Options{Plugin: idleSlot{}})
	pod := newPod("1", v1.Container{Name: "app", Image: "app", ReadinessProbe: httpReadiness(), Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 80}}})
	m.UpdatePod(pod, runtimeOf(pod, "app"))
	m.apply(t.Context(), report(wireReadiness, settledSuccess, settledSuccess))
	m.UpdatePod(pod, runtimeOf(pod, "app")) // again: nothing changes
	if ready, known := m.Ready("app-1"); !ready || !known {
		t.Errorf("Ready after a repeated UpdatePod = %v, %v; want the verdict kept", ready, known)
	}

	// The instance is replaced by app-2.
	rt := runtimeOf(pod)
	rt.Containers = append(rt.Containers, &container.ContainerStatus{ID: "app-2", Name: "app", State: container.StateRunning, StartedAt: containerStart})
	m.UpdatePod(pod, rt)
	if _, known := m.Ready("app-1"); known {
		t.Error("app-1 still known after it was replaced")
	}
	if ready, known := m.Ready("app-2"); ready || !known {
		t.Errorf("Ready(app-2) = %v, %v; want a new instance to start unready", ready, known)
	}
	m.apply(t.Context(), report(wireReadiness, settledSuccess, settledSuccess)) // app-1's, late
	if len(m.Updates()) != 1 {
		t.Errorf("%d updates; want only the first one: a late result of a gone instance is ignored", len(m.Updates()))
	}

	m.RemovePod(pod.UID)
	if _, known := m.Ready("app-2"); known {
		t.Error("app-2 still known after RemovePod")
	}
	if !m.Started("app-2") {
		t.Error("an unknown instance does not count as started")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := newManager(t, Options{Plugin: idleSlot{}, Registerer: reg})
	pod := newPod("1", v1.Container{Name: "app", Image: "app", ReadinessProbe: httpReadiness(), LivenessProbe: execProbe("true"),
		Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 80}}})
	m.UpdatePod(pod, runtimeOf(pod, "app"))
	for _, r := range []*probesv1.ProbeResult{
		report(wireReadiness, settledSuccess, settledSuccess),
		report(wireReadiness, settledSuccess, settledSuccess),
		report(wireReadiness, settledNone, settledFailure),
		report(wireLiveness, settledNone, probesv1.Result_RESULT_UNKNOWN),
		report(wireReadiness, settledSuccess, settledNone), // a restatement: no attempt
	} {
		m.apply(t.Context(), r)
	}
	want := `
# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="app",namespace="default",pod="web",pod_uid="uid-1",probe_type="Liveness",result="unknown"} 1
prober_probe_total{container="app",namespace="default",pod="web",pod_uid="uid-1",probe_type="Readiness",result="failed"} 1
prober_probe_total{container="app",namespace="default",pod="web",pod_uid="uid-1",probe_type="Readiness",result="successful"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "prober_probe_total"); err != nil {
		t.Error(err)
	}
	// Durations of successful and unknown attempts, as upstream, in the
	// default buckets.
	for probe, want := range map[string]uint64{"Readiness": 2, "Liveness": 1} {
		h := histogram(t, reg, probe)
		if h.GetSampleCount() != want || len(h.GetBucket()) != len(prometheus.DefBuckets) {
			t.Errorf("%s durations: %d samples in %d buckets, want %d in the %d default buckets",
				probe, h.GetSampleCount(), len(h.GetBucket()), want, len(prometheus.DefBuckets))
		}
	}

	m.RemovePod(pod.UID)
	if n := testutil.CollectAndCount(m.metrics.total) + testutil.CollectAndCount(m.metrics.duration); n != 0 {
		t.Errorf("%d series left after RemovePod, want none", n)
	}
}

// histogram is the prober_probe_duration_seconds series of a probe type of
// container app.
func histogram(t *testing.T, reg prometheus.Gatherer, probeType string) *dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "prober_probe_duration_seconds" {
			continue
		}
		if f.GetHelp() != "[ALPHA] Duration in seconds for a probe response." {
			t.Errorf("help %q", f.GetHelp())
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["probe_type"] == probeType && labels["container"] == "app" && labels["pod"] == "web" && labels["namespace"] == "default" && len(labels) == 4 {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("no prober_probe_duration_seconds series of %s probes", probeType)
	return nil
}
