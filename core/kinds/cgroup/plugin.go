package cgroup

import (
	"errors"

	"github.com/microlet/microlet/core/pluginhost"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// Plugin is how the manager reaches the cgroup plugin. Its errors wrap
// pluginhost.ErrNotConfigured when no cgroup plugin is configured (pods run
// without a cgroup of their own or resource settings, and every pod is
// admitted), and pluginhost.ErrUnavailable when one is configured but does
// not serve.
type Plugin = pluginhost.Caller[cgroupv1.CgroupServiceClient]

// HostPlugin reaches the cgroup plugin through the plugin host; the slot
// is looked up on every call, so a plugin configured by a reload is used
// at once.
func HostPlugin(host *pluginhost.Host) Plugin {
	return pluginhost.Client[cgroupv1.CgroupServiceClient]{Slot: host.Kind(pluginhost.Cgroup), New: cgroupv1.NewCgroupServiceClient}
}

// notConfigured reports that the config has no cgroup plugin.
func notConfigured(err error) bool { return errors.Is(err, pluginhost.ErrNotConfigured) }
