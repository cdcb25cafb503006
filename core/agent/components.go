package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/kinds/cgroup"
	"github.com/microlet/microlet/core/kinds/devices"
	"github.com/microlet/microlet/core/kinds/probes"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/secadmit"
	"github.com/microlet/microlet/core/pods/syncloop"
	"github.com/microlet/microlet/core/pods/sysctls"
	"github.com/microlet/microlet/core/runtime/cri"
)

// The adapters here connect the core's components to each other without
// those packages knowing one another.

// configured says whether the config has a plugin block of kind.
func (a *Agent) configured(kind pluginhost.Kind) bool {
	for _, p := range a.cfg.Plugins {
		if pluginhost.Kind(p.Kind) == kind {
			return true
		}
	}
	return false
}

// cgroupAdmitter admits pods by the cgroup plugin's resource fit.
type cgroupAdmitter struct{ m *cgroup.Manager }

var _ syncloop.PureAdmitter = cgroupAdmitter{}

func (c cgroupAdmitter) Name() string { return string(pluginhost.Cgroup) }

// Pure: the fit changes nothing; the CPUs are cpuAdmitter's.
func (c cgroupAdmitter) Pure() bool { return true }

func (c cgroupAdmitter) Admit(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) syncloop.Admission {
	return cgroupVerdict(c.m.Fit(ctx, pod, admitted))
}

// cpuAdmitter gives a pod that fits its CPUs from the CPU manager (the
// cgroup plugin's AllocateCPUs), in admission order.
type cpuAdmitter struct{ m *cgroup.Manager }

func (c cpuAdmitter) Name() string { return "cpu-manager" }

func (c cpuAdmitter) Admit(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) syncloop.Admission {
	return cgroupVerdict(c.m.AllocateCPUs(ctx, pod, admitted))
}

// cgroupVerdict is the cgroup manager's decision as the sync loop takes it.
func cgroupVerdict(d cgroup.Decision, err error) syncloop.Admission {
	if err != nil {
		// The manager answers errors only for "ask again later".
		return syncloop.Admission{Retry: true, Message: err.Error()}
	}
	return syncloop.Admission{Admit: d.Admit, Reason: d.Reason, Message: d.Message}
}

// deviceTopology gives the cgroup manager's topology hints the devices of
// a resource (the devices manager is made after the cgroup manager, so
// it is looked up when asked).
func deviceTopology(m *devices.Manager, resource string) ([]cgroup.Device, bool) {
	if m == nil {
		return nil, false
	}
	all, ok := m.Devices(resource)
	out := make([]cgroup.Device, 0, len(all))
	for _, d := range all {
		out = append(out, cgroup.Device{ID: d.ID, NUMANodes: d.NUMANodes, Free: d.Free})
	}
	return out, ok
}

// cgroupReleaser removes a terminated pod's cgroup.
type cgroupReleaser struct{ m *cgroup.Manager }

func (c cgroupReleaser) Name() string { return string(pluginhost.Cgroup) }

func (c cgroupReleaser) Release(_ context.Context, pod *v1.Pod) error {
	return c.m.RemovePod(pod.UID)
}

// probeVerdicts gives the status generator the prober's readiness or
// startup verdicts by container ID.
type probeVerdicts struct {
	m       *probes.Manager
	startup bool
}

func (p probeVerdicts) Result(containerID string) (bool, bool) {
	if p.startup {
		return p.m.Started(containerID), true
	}
	return p.m.Ready(containerID)
}

// probeUpdates turns the prober's verdict changes into the pods to sync.
func probeUpdates(ctx context.Context, m *probes.Manager) <-chan types.UID {
	out := make(chan types.UID, 64)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-m.Updates():
				if !ok {
					return
				}
				select {
				case out <- u.PodUID:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// newSecurityAdmitter checks pods' sysctls against the safe ones the
// kernel of kernelRelease namespaces and allowed_unsafe_sysctls (safe ones
// may be listed there too, as in the kubelet), AppArmor against the host, and runtime
// features against the runtime's last status.
func newSecurityAdmitter(allowedUnsafe []string, kernelRelease string, poller *cri.StatusPoller) (*secadmit.Admitter, error) {
	allowlist, err := sysctls.NewAllowlist(append(sysctls.Safe(kernelRelease), allowedUnsafe...))
	if err != nil {
		return nil, fmt.Errorf("allowed_unsafe_sysctls: %w", err)
	}
	return &secadmit.Admitter{Sysctls: allowlist, AppArmor: secadmit.AppArmorEnabled(), Runtime: poller}, nil
}
