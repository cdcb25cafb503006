package events

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/microlet/microlet/core/logging"
)

const (
	// EventRecordQPS and EventBurst bound the events sent to the API
	// server: the kubelet's eventRecordQPS and eventBurst defaults.
	EventRecordQPS = 50
	EventBurst     = 100
	// sourceComponent is the source every kubelet names (see the package
	// documentation for why microlet names it too).
	sourceComponent = "kubelet"
)

// Broadcaster sends what its recorder records to the API server, through
// client-go's spam filter and correlation, until its context ends.
type Broadcaster struct {
	broadcaster record.EventBroadcaster
	recorder    Recorder
}

// Start sends the node's events to the API server restConfig reaches,
// through a client of their own with the kubelet's event rate limits (as
// upstream, so that a burst of events never delays the node's status or
// pods). Events are logged at debug level too.
func Start(ctx context.Context, restConfig *rest.Config, nodeName string, log hclog.Logger) (*Broadcaster, error) {
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = EventRecordQPS, EventBurst
	cfg.RateLimiter = nil // the limits above, not the shared client's limiter
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("event client: %w", err)
	}
	return start(ctx, &corev1client.EventSinkImpl{Interface: client.Events("")}, nodeName, log), nil
}

// start records to sink; tests give it a fake clientset's.
func start(ctx context.Context, sink record.EventSink, nodeName string, log hclog.Logger) *Broadcaster {
	// client-go logs each failed attempt to send an event through the
	// context's logger (klog's on stderr otherwise): while the API server is
	// down, a line per event every 10 s. They go to debug level: an outage
	// is worth a line, not one per event.
	ctx = klog.NewContext(ctx, logging.DebugLogr(log))
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(sink)
	b.StartEventWatcher(func(e *v1.Event) {
		log.Debug("event", "object", e.InvolvedObject.Kind+" "+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name,
			"field", e.InvolvedObject.FieldPath, "type", e.Type, "reason", e.Reason, "message", e.Message)
	})
	return &Broadcaster{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, v1.EventSource{Component: sourceComponent, Host: nodeName}),
	}
}

// Recorder records the node's events.
func (b *Broadcaster) Recorder() Recorder { return b.recorder }

// Shutdown stops sending; events not sent yet are dropped.
func (b *Broadcaster) Shutdown() { b.broadcaster.Shutdown() }
