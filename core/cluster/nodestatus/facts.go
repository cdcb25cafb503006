// Package nodestatus registers the node with the API server and keeps its
// status there, as the kubelet's kubelet_node_status.go and nodestatus
// setters do: the Node is built from node facts the core already measured
// (pure functions, table-tested), and an Updater posts it, patching only
// when it changed or once every report period.
package nodestatus

import (
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Facts are what the core knows about the node at one moment; the Node's
// status is computed from them alone.
type Facts struct {
	// Hostname is the node's host name (the kubelet's, after
	// hostname-override): the Hostname address and the hostname label.
	Hostname string
	// NodeIPs are the node's InternalIP addresses.
	NodeIPs []string
	// Capacity and Allocatable are the machine's resources as the cgroup
	// manager and the eviction reservation leave them, device plugins'
	// extended resources excluded.
	Capacity, Allocatable v1.ResourceList
	// DeviceCapacity and DeviceAllocatable are the device plugins'
	// extended resources (all devices; the healthy ones).
	DeviceCapacity, DeviceAllocatable v1.ResourceList
	// RemovedDevices are extended resources a device plugin offered before
	// and no longer does: upstream reports them with capacity 0, so that
	// the scheduler knows them as the node's and schedules none.
	RemovedDevices []v1.ResourceName

	MachineID, SystemUUID, BootID string
	KernelVersion, OSImage        string
	// ContainerRuntimeVersion is "<runtime name>://<version>".
	ContainerRuntimeVersion string
	KubeletVersion          string
	// KubeletPort is the node API's port (daemonEndpoints).
	KubeletPort int32

	// Images are the node's images, largest first, as Images makes them.
	Images []v1.ContainerImage

	// NotReady are why pods cannot run (runtime, network, PLEG), in the
	// kubelet's words; none when the node is ready.
	NotReady []error
	// MemoryPressure, DiskPressure and PIDPressure are the eviction
	// manager's verdicts.
	MemoryPressure, DiskPressure, PIDPressure bool
}

// Registration is what the node asks for when it registers: the config's
// node_labels and register_with_taints.
type Registration struct {
	Labels map[string]string
	Taints []v1.Taint
}

// Event is a node event upstream records when a status changes (reason
// and message as the kubelet's recordNodeStatusEvent and recordEvent).
type Event struct {
	Type, Reason, Message string
}

// notBuildMetadata is what semver does not allow after "+".
var notBuildMetadata = regexp.MustCompile(`[^0-9A-Za-z.-]+`)

// KubeletVersion is the kubeletVersion the node reports: the Kubernetes
// version whose API microlet is built against, which the control plane
// compares for version skew and features, with microlet's own version as
// semver build metadata, which comparisons ignore (as k3s's "v1.34.4+k3s1").
// apiModuleVersion is k8s.io/api's module version (v0.34.4 is v1.34.4).
func KubeletVersion(apiModuleVersion, agentVersion string) string {
	kube := "v1" + strings.TrimPrefix(apiModuleVersion, "v0")
	meta := strings.Trim(notBuildMetadata.ReplaceAllString(agentVersion, "-"), ".-")
	if meta == "" {
		return kube + "+microlet"
	}
	return kube + "+microlet." + meta
}
