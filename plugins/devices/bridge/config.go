package bridge

import (
	"fmt"
	"path/filepath"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/sdk"
)

// maxSocketPath is the longest path a unix socket may have on Linux: 108
// bytes of sun_path, the terminating NUL included.
const maxSocketPath = 107

// Config is the plugin's config block:
//
//	device_plugin_dir = "/var/lib/kubelet/device-plugins/"
type Config struct {
	// DevicePluginDir holds kubelet.sock and the device plugins' sockets;
	// upstream's DevicePluginPath by default, so vendor DaemonSets that
	// mount it work unchanged.
	DevicePluginDir string `json:"device_plugin_dir"`
}

// SetDefaults sets upstream's directory.
func (c *Config) SetDefaults() { c.DevicePluginDir = pluginapi.DevicePluginPath }

// Validate checks that the directory is absolute and short enough for the
// sockets in it.
func (c *Config) Validate() error {
	dir := c.DevicePluginDir
	switch {
	case !filepath.IsAbs(dir):
		return sdk.ConfigError{Path: "device_plugin_dir", Message: fmt.Sprintf("expected an absolute path such as %q, got %q", pluginapi.DevicePluginPath, dir)}
	case len(kubeletSocketPath(dir)) > maxSocketPath:
		return sdk.ConfigError{Path: "device_plugin_dir", Message: fmt.Sprintf("%q is too long: a unix socket path has at most %d bytes, and %s would have %d",
			dir, maxSocketPath, kubeletSocketPath(dir), len(kubeletSocketPath(dir)))}
	}
	return nil
}

// kubeletSocketPath is where the Registration service is served.
func kubeletSocketPath(dir string) string {
	return filepath.Join(dir, filepath.Base(pluginapi.KubeletSocket))
}
