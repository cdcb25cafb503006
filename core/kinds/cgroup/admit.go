package cgroup

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pluginhost"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Admission reasons of upstream pkg/kubelet/lifecycle for verdicts the
// plugin did not give.
const (
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
	ReasonUnknown                  = "UnknownReason"
)

// Decision is an admission verdict: on rejection, the reason (OutOfcpu,
// OutOfmemory, OutOfpods, ...) and message the pod's status gets.
type Decision struct {
	Admit   bool
	Reason  string
	Message string
}

// Admit asks the plugin whether pod fits next to the admitted pods (those
// not yet terminated, pod excluded), then, when it does, for its CPUs
// (AllocateCPUs). An error wrapping pluginhost.ErrUnavailable means
// neither yes nor no: the plugin does not serve, so ask again later.
// Without a cgroup plugin, or with one that does no admission, every pod
// is admitted.
func (m *Manager) Admit(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) (Decision, error) {
	d, allocate, err := m.fit(ctx, pod, admitted)
	if err != nil || !d.Admit || !allocate {
		return d, err
	}
	return m.AllocateCPUs(ctx, pod, admitted)
}

// Fit is Admit's first half, the plugin's resource fit, which changes
// nothing: pods may be asked about at once, in any order.
func (m *Manager) Fit(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) (Decision, error) {
	d, _, err := m.fit(ctx, pod, admitted)
	return d, err
}

// AllocateCPUs is Admit's second half, for a pod that fits: the CPU
// manager's allocation (the plugin's AllocateCPUs, checked and recorded),
// which depends on the order pods are admitted in.
func (m *Manager) AllocateCPUs(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) (Decision, error) {
	if m.cpu == nil {
		return Decision{Admit: true}, nil
	}
	return m.allocateCPUs(ctx, pod, admitted)
}

// fit is the plugin's verdict; allocate says whether CPUs are to be
// allocated next (not without a cgroup plugin).
func (m *Manager) fit(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) (d Decision, allocate bool, err error) {
	node := m.nodeView()
	if node.Allocatable == nil {
		// Allocatable comes from the node plan; make one now.
		err := m.syncNode(ctx)
		node = m.nodeView()
		switch {
		case errors.Is(err, pluginhost.ErrUnavailable):
			return Decision{}, false, fmt.Errorf("pod %s waits for node allocatable from the cgroup plugin: %w", podName(pod), err)
		case err != nil && node.Allocatable == nil:
			// The plugin refuses to plan the node (reservations beyond
			// capacity, say): nothing can be admitted against it.
			return Decision{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Node allocatable is unknown: %v", err)}, false, nil
		}
	}
	views := make([]*typesv1.Pod, 0, len(admitted))
	for _, p := range admitted {
		views = append(views, podView(p))
	}
	resp, err := pluginhost.Ask(ctx, m.opts.Plugin, "cgroup plugin Admit", func(ctx context.Context, p pluginhost.Conn[cgroupv1.CgroupServiceClient]) (*cgroupv1.AdmitResponse, error) {
		return p.Client.Admit(ctx, &cgroupv1.AdmitRequest{Pod: podView(pod), Node: node, AdmittedPods: views})
	})
	switch {
	case notConfigured(err):
		m.noPlugin()
		return Decision{Admit: true}, false, nil
	case err != nil && ctx.Err() != nil:
		return Decision{}, false, ctx.Err()
	case errors.Is(err, pluginhost.ErrUnavailable):
		return Decision{}, false, fmt.Errorf("pod %s waits for the cgroup plugin's admission: %w", podName(pod), err)
	case status.Code(err) == codes.Unimplemented:
		return Decision{Admit: true}, true, nil
	case err != nil:
		return Decision{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Unexpected error while attempting admission: %v", err)}, false, nil
	}
	m.pluginAnswered()
	d = Decision{Admit: resp.GetAdmit(), Reason: resp.GetReason(), Message: resp.GetMessage()}
	if !d.Admit && d.Reason == "" {
		d.Reason = ReasonUnknown
	}
	return d, true, nil
}
