package cri

import (
	"context"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/promreg"
)

// operations records every CRI call as the kubelet does
// (kubelet_runtime_operations_total, _duration_seconds, _errors_total, by
// operation_type; RunPodSandbox also in kubelet_run_podsandbox_*, by
// runtime_handler) and, at trace level, logs it with its duration: the
// timeline of a pod's start is then one grep away.
type operations struct {
	log             hclog.Logger
	total           *prometheus.CounterVec
	errors          *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	sandboxDuration *prometheus.HistogramVec
	sandboxErrors   *prometheus.CounterVec
}

// newOperations registers the metrics on reg; a nil reg keeps them
// unexported.
func newOperations(reg prometheus.Registerer, log hclog.Logger) (*operations, error) {
	o := &operations{
		log: log,
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		sandboxDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "run_podsandbox_duration_seconds",
			Help:    "Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.",
			Buckets: prometheus.DefBuckets,
		}, []string{"runtime_handler"}),
		sandboxErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "run_podsandbox_errors_total",
			Help: "Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.",
		}, []string{"runtime_handler"}),
	}
	if err := promreg.Register(reg, o.total, o.errors, o.duration, o.sandboxDuration, o.sandboxErrors); err != nil {
		return nil, err
	}
	return o, nil
}

// record counts one call that began at start.
func (o *operations) record(method string, start time.Time, err error) {
	took := time.Since(start)
	op, ok := operationTypes[method]
	if !ok {
		op = operationType(method)
	}
	o.total.WithLabelValues(op).Inc()
	o.duration.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		o.errors.WithLabelValues(op).Inc()
	}
	if o.log.IsTrace() {
		o.log.Trace("CRI call", "operation", op, "took", took, "error", err)
	}
}

func (o *operations) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	o.record(method, start, err)
	if run, ok := req.(*runtimeapi.RunPodSandboxRequest); ok {
		o.sandboxDuration.WithLabelValues(run.GetRuntimeHandler()).Observe(time.Since(start).Seconds())
		if err != nil {
			o.sandboxErrors.WithLabelValues(run.GetRuntimeHandler()).Inc()
		}
	}
	return err
}

// stream records a stream's opening (GetContainerEvents): upstream counts
// the call, and a stream's lifetime says nothing about the runtime's speed.
func (o *operations) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	start := time.Now()
	s, err := streamer(ctx, desc, cc, method, opts...)
	o.record(method, start, err)
	return s, err
}

// operationTypes are the operation types of every method of the CRI's two
// services, by full method name, worked out once: a call only looks its
// type up.
var operationTypes = func() map[string]string {
	types := map[string]string{}
	for _, service := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		names := make([]string, 0, len(service.Methods)+len(service.Streams))
		for _, m := range service.Methods {
			names = append(names, m.MethodName)
		}
		for _, st := range service.Streams {
			names = append(names, st.StreamName)
		}
		for _, name := range names {
			method := "/" + service.ServiceName + "/" + name
			types[method] = operationType(method)
		}
	}
	return types
}()

// upstreamNames are the kubelet's operation types that are not simply the
// method's name in snake case.
var upstreamNames = map[string]string{
	"UpdateContainerResources": "update_container",
}

var wordStart = regexp.MustCompile(`([a-z0-9])([A-Z])`)

// operationType is the kubelet's operation_type of a CRI method:
// "/runtime.v1.RuntimeService/RunPodSandbox" is "run_podsandbox".
func operationType(method string) string {
	name := path.Base(method)
	if op, ok := upstreamNames[name]; ok {
		return op
	}
	snake := strings.ToLower(wordStart.ReplaceAllString(name, "${1}_${2}"))
	return strings.ReplaceAll(snake, "pod_sandbox", "podsandbox")
}
