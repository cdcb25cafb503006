// Package provider is the default stats plugin: it measures the node, its
// pods and their containers from /proc, the cgroup tree, statfs, disk
// usage walks and the runtime's CRI stats (through the core's host
// service), and answers GetSummary with the kubelet's Summary API
// (plugins/stats/summary assembles it). docs/stats.md describes what
// every field is made of.
package provider

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/microlet/microlet/sdk"
)

// Config is the plugin's config block.
type Config struct {
	// ProcFS is where procfs is mounted (the node's, when the plugin runs
	// in a container with the host's /proc mounted elsewhere).
	ProcFS string `json:"procfs"`
	// CgroupFS is where the cgroup hierarchies are mounted.
	CgroupFS string `json:"cgroupfs"`
	// PodsCgroup is the cgroup that holds every pod (the "pods" system
	// container). Empty: the one the core names in its node view (the
	// cgroup plugin's plan, under cgroup_root), else "/kubepods" with the
	// cgroupfs driver, "/kubepods.slice" with systemd's, as the kubelet
	// names it.
	PodsCgroup string `json:"pods_cgroup"`
	// MaxAge is how old a summary may be when a request does not ask for
	// fresh stats; 0 measures on every request. Eviction always asks for
	// fresh stats.
	MaxAge sdk.Duration `json:"max_age"`
	// DiskUsagePeriod is how often a volume's tree is walked again (the
	// kubelet's volumeStatsAggPeriod).
	DiskUsagePeriod sdk.Duration `json:"disk_usage_period"`
}

// SetDefaults applies the defaults; the SDK calls it before decoding.
func (c *Config) SetDefaults() {
	*c = Config{
		ProcFS:          "/proc",
		CgroupFS:        "/sys/fs/cgroup",
		MaxAge:          sdk.Duration{Duration: 10 * time.Second},
		DiskUsagePeriod: sdk.Duration{Duration: time.Minute},
	}
}

// Validate reports every problem of the block at once.
func (c *Config) Validate() error {
	var errs sdk.ConfigErrors
	for _, p := range []struct{ key, path string }{{"procfs", c.ProcFS}, {"cgroupfs", c.CgroupFS}} {
		if !filepath.IsAbs(p.path) {
			errs = append(errs, sdk.ConfigError{Path: p.key, Message: "expected an absolute path, got " + strconv.Quote(p.path)})
		}
	}
	if c.PodsCgroup != "" && !strings.HasPrefix(c.PodsCgroup, "/") {
		errs = append(errs, sdk.ConfigError{Path: "pods_cgroup", Message: "expected a cgroup path from the hierarchy's root such as \"/kubepods\", got " + strconv.Quote(c.PodsCgroup)})
	}
	if c.MaxAge.Duration < 0 {
		errs = append(errs, sdk.ConfigError{Path: "max_age", Message: "expected a duration of 0s or more, got " + c.MaxAge.String()})
	}
	if c.DiskUsagePeriod.Duration < time.Second {
		errs = append(errs, sdk.ConfigError{Path: "disk_usage_period", Message: "expected a duration of 1s or more, got " + c.DiskUsagePeriod.String()})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
