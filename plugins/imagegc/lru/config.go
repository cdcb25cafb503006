// Package lru plans image and container garbage collection the way the
// kubelet does: unused images least recently used first
// (pkg/kubelet/images/image_gc_manager.go), dead containers oldest first
// within per-container and node-wide limits (pkg/kubelet/kuberuntime/
// kuberuntime_gc.go). It only plans; the core lists and removes. It does no
// I/O and reads no clock: time comes in the request.
package lru

import (
	"fmt"
	"time"

	"github.com/microlet/microlet/sdk"
)

// Config is the imagegc config block. Keys follow the kubelet's fields and
// flags; defaults are the kubelet's.
type Config struct {
	// HighThresholdPercent (imageGCHighThresholdPercent): image GC runs when
	// the image filesystem is at least this full.
	HighThresholdPercent int `json:"high_threshold_percent"`
	// LowThresholdPercent (imageGCLowThresholdPercent): image GC frees down to this.
	LowThresholdPercent int `json:"low_threshold_percent"`
	// MinimumAge (imageMinimumGCAge): images seen more recently are kept.
	MinimumAge sdk.Duration `json:"minimum_age"`
	// MaximumAge (imageMaximumGCAge): images unused for longer are removed
	// whatever the usage; 0 switches this off.
	MaximumAge sdk.Duration `json:"maximum_age"`
	// ContainerMinimumAge (--minimum-container-ttl-duration): dead containers
	// created more recently are kept.
	ContainerMinimumAge sdk.Duration `json:"container_minimum_age"`
	// MaxPerPodContainer (--maximum-dead-containers-per-container): dead
	// containers kept per container of a pod; -1 for no limit.
	MaxPerPodContainer int `json:"max_per_pod_container"`
	// MaxContainers (--maximum-dead-containers): dead containers kept on the
	// node; -1 for no limit.
	MaxContainers int `json:"max_containers"`
}

// SetDefaults applies the kubelet's defaults; the SDK calls it before decoding.
func (c *Config) SetDefaults() {
	*c = Config{
		HighThresholdPercent: 85,
		LowThresholdPercent:  80,
		MinimumAge:           sdk.Duration{Duration: 2 * time.Minute},
		MaxPerPodContainer:   1,
		MaxContainers:        -1,
	}
}

// Validate applies the kubelet's checks (ValidateKubeletConfiguration,
// NewImageGCManager, NewContainerGC) and reports every problem at once.
func (c *Config) Validate() error {
	var errs sdk.ConfigErrors
	fail := func(path, format string, args ...any) {
		errs = append(errs, sdk.ConfigError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if c.HighThresholdPercent < 0 || c.HighThresholdPercent > 100 {
		fail("high_threshold_percent", "expected a percentage from 0 to 100, got %d", c.HighThresholdPercent)
	}
	if c.LowThresholdPercent < 0 || c.LowThresholdPercent > 100 {
		fail("low_threshold_percent", "expected a percentage from 0 to 100, got %d", c.LowThresholdPercent)
	}
	if c.LowThresholdPercent >= c.HighThresholdPercent {
		fail("low_threshold_percent", "must be less than high_threshold_percent (%d), got %d", c.HighThresholdPercent, c.LowThresholdPercent)
	}
	for _, d := range []struct {
		path string
		d    sdk.Duration
	}{{"minimum_age", c.MinimumAge}, {"maximum_age", c.MaximumAge}, {"container_minimum_age", c.ContainerMinimumAge}} {
		if d.d.Duration < 0 {
			fail(d.path, "expected a duration of 0s or more, got %s", d.d)
		}
	}
	if c.MaximumAge.Duration > 0 && c.MaximumAge.Duration <= c.MinimumAge.Duration {
		fail("maximum_age", "must be greater than minimum_age (%s), or 0s to switch it off; got %s", c.MinimumAge, c.MaximumAge)
	}
	if c.MaxPerPodContainer < -1 {
		fail("max_per_pod_container", "expected a count of 0 or more, or -1 for no limit; got %d", c.MaxPerPodContainer)
	}
	if c.MaxContainers < -1 {
		fail("max_containers", "expected a count of 0 or more, or -1 for no limit; got %d", c.MaxContainers)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
