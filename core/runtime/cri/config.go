package cri

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults, by the kubelet's names where it has them.
const (
	// DefaultRuntimeEndpoint is containerRuntimeEndpoint's default.
	DefaultRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	// DefaultRequestTimeout is runtimeRequestTimeout's default: the deadline
	// of an ordinary call.
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultImagePullTimeout bounds PullImage. The kubelet sets no deadline
	// and relies on the runtime's own pull progress timeout, which
	// containerd only has from 1.7; without one a stalled pull would hold
	// its pod forever. 15 minutes lets a multi-gigabyte image through a
	// slow link.
	DefaultImagePullTimeout = 15 * time.Minute
	// DefaultConnectTimeout is the kubelet's maxWaitForContainerRuntime: how
	// long Connect waits for the runtime to answer.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultEventsProbeTimeout is how long Connect waits on a
	// GetContainerEvents stream for a verdict; see SupportsEvents.
	DefaultEventsProbeTimeout = 2 * time.Second
)

// Config says where the runtime is and how long calls may take. Zero
// fields take the defaults above.
type Config struct {
	// RuntimeEndpoint is the RuntimeService socket, "unix:///path" or a bare
	// absolute path.
	RuntimeEndpoint string
	// ImageEndpoint is the ImageService socket; empty means RuntimeEndpoint.
	ImageEndpoint string
	// RequestTimeout is the deadline of ordinary calls. A caller's shorter
	// deadline wins. Calls that wait on containers get it on top of their
	// own wait (StopContainer's grace period, ExecSync's timeout), and
	// RunPodSandbox gets it twice, as in the kubelet.
	RequestTimeout time.Duration
	// ImagePullTimeout is the deadline of PullImage.
	ImagePullTimeout time.Duration
	// ConnectTimeout bounds Connect's wait for the runtime to answer.
	ConnectTimeout time.Duration
	// EventsProbeTimeout bounds Connect's check for GetContainerEvents.
	EventsProbeTimeout time.Duration
	// Metrics, when set, gets the kubelet_runtime_operations_* metrics.
	Metrics prometheus.Registerer
}

func (c Config) withDefaults() Config {
	if c.RuntimeEndpoint == "" {
		c.RuntimeEndpoint = DefaultRuntimeEndpoint
	}
	if c.ImageEndpoint == "" {
		c.ImageEndpoint = c.RuntimeEndpoint
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ImagePullTimeout == 0 {
		c.ImagePullTimeout = DefaultImagePullTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.EventsProbeTimeout == 0 {
		c.EventsProbeTimeout = DefaultEventsProbeTimeout
	}
	return c
}

// grpcTarget turns an endpoint into a gRPC target. Only unix sockets are
// supported: CRI runtimes on Linux listen on nothing else, and a TCP
// endpoint would expose the runtime without authentication.
func grpcTarget(endpoint string) (string, error) {
	path := endpoint
	if scheme, rest, found := strings.Cut(endpoint, "://"); found {
		if scheme != "unix" {
			return "", fmt.Errorf("CRI endpoint %q: scheme %q is not supported; expected unix:///path/to/socket", endpoint, scheme)
		}
		path = rest
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("CRI endpoint %q: expected an absolute socket path (unix:///path/to/socket or /path/to/socket)", endpoint)
	}
	return "unix://" + path, nil
}
