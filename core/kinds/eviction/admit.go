package eviction

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/podview"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/pods/syncloop"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk"
)

// The manager admits pods under node pressure: it is a syncloop.Admitter.
var _ syncloop.PureAdmitter = (*Manager)(nil)

// Name names the admitter in the sync loop's logs.
func (m *Manager) Name() string { return string(pluginhost.Eviction) }

// Pure: the verdict only reads the pod and the node's pressure conditions.
func (m *Manager) Pure() bool { return true }

// Admit decides whether a new pod may start under the node's current
// pressure conditions (upstream eviction manager Admit). Critical pods are
// always admitted. The plugin decides when it implements admission
// (eviction.admit); otherwise, and while it does not serve, the core's
// rule does, which is the kubelet's: under MemoryPressure alone only
// BestEffort pods are rejected, under any other pressure every pod. A
// rejection has reason Evicted unless the plugin gives another.
func (m *Manager) Admit(ctx context.Context, pod *v1.Pod, _ []*v1.Pod) syncloop.Admission {
	if podview.IsCritical(pod) {
		return syncloop.Admission{Admit: true}
	}
	view := m.opts.Pods.PodView(pod)
	if view.QosClass == "" {
		// A new pod has no cgroup plan or status yet to carry its class.
		view.QosClass = string(status.GetPodQOS(pod))
	}
	req := &evictionv1.AdmitRequest{Pod: view, Conditions: m.Conditions()}
	resp, err := callOptional(ctx, m.opts.Plugin, "Admit", sdk.CapabilityEvictionAdmit, func(ctx context.Context, c evictionv1.EvictionServiceClient) (*evictionv1.AdmitResponse, error) {
		return c.Admit(ctx, req)
	})
	if err != nil {
		if !errors.Is(err, errNoCapability) {
			m.log.Debug("the eviction plugin cannot admit; the core's rule decides", "pod", podName(pod), "error", err)
		}
		if resp, err = m.builtin.Admit(req); err != nil {
			// Only a request without a pod fails, which cannot happen here.
			return syncloop.Admission{Reason: evictedReason, Message: err.Error()}
		}
	}
	if resp.GetAdmit() {
		return syncloop.Admission{Admit: true}
	}
	reason := resp.GetReason()
	if reason == "" {
		reason = evictedReason
	}
	return syncloop.Admission{Reason: reason, Message: resp.GetMessage()}
}

// evictedReason is the reason of pods rejected or evicted under pressure.
const evictedReason = status.EvictedReason
