package psi

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
)

// Defaults of the pressure levels. The node's "some" level is a stall a
// node lives with only briefly: 40 % of the last 10 s with at least one
// task waiting for memory; its "full" level, every runnable task waiting a
// fifth of the time, is thrashing. A pod's own "full" level at 60 % is
// systemd-oomd's default limit on memory.pressure.
var (
	DefaultMemoryPressure    = []string{"some.avg10>40", "full.avg10>20"}
	DefaultPodMemoryPressure = []string{"full.avg10>60"}
)

// Config is the kubelet strategy's config plus the pressure levels.
type Config struct {
	evictionengine.Config
	// MemoryPressure are levels on the node's /proc/pressure/memory, such
	// as "some.avg10>40"; any one above evicts. Empty: none.
	MemoryPressure []string `json:"memory_pressure"`
	// PodMemoryPressure are levels on each pod's memory.pressure, where
	// the unified cgroup hierarchy gives one. Empty: none.
	PodMemoryPressure []string `json:"pod_memory_pressure"`
}

// SetDefaults applies the kubelet's defaults and the default levels.
func (c *Config) SetDefaults() {
	c.Config.SetDefaults()
	c.MemoryPressure = append([]string(nil), DefaultMemoryPressure...)
	c.PodMemoryPressure = append([]string(nil), DefaultPodMemoryPressure...)
}

// Validate checks the kubelet's keys and every level, reporting all at once.
func (c *Config) Validate() error {
	_, _, err := c.levels()
	return err
}

// levels parses both lists of levels, with the engine's keys checked too.
func (c *Config) levels() (node, pods []Level, err error) {
	var errs sdk.ConfigErrors
	if err := c.Config.Validate(); err != nil && !errors.As(err, &errs) {
		return nil, nil, err
	}
	node, errs = parseLevels("memory_pressure", c.MemoryPressure, errs)
	pods, errs = parseLevels("pod_memory_pressure", c.PodMemoryPressure, errs)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return node, pods, nil
}

// Level is one pressure level: an average of a PSI line above a percentage.
type Level struct {
	// Line is "some" or "full".
	Line string
	// Window is the average's window in seconds: 10, 60 or 300.
	Window uint32
	// Percent is the level, 0 (exclusive) to 100.
	Percent float64
}

func (l Level) String() string { return fmt.Sprintf("%s.avg%d>%g", l.Line, l.Window, l.Percent) }

var levelSyntax = regexp.MustCompile(`^(some|full)\.avg(10|60|300)>([0-9]+(?:\.[0-9]+)?)$`)

func parseLevels(key string, entries []string, errs sdk.ConfigErrors) ([]Level, sdk.ConfigErrors) {
	var out []Level
	seen := map[string]bool{}
	for _, e := range entries {
		m := levelSyntax.FindStringSubmatch(e)
		if m == nil {
			errs = append(errs, sdk.ConfigError{Path: key, Message: fmt.Sprintf("%q: expected <some|full>.avg<10|60|300>><percent>, such as \"full.avg10>20\"", e)})
			continue
		}
		window, _ := strconv.ParseUint(m[2], 10, 32)
		percent, _ := strconv.ParseFloat(m[3], 64)
		l := Level{Line: m[1], Window: uint32(window), Percent: percent}
		switch {
		case percent <= 0 || percent >= 100:
			errs = append(errs, sdk.ConfigError{Path: key, Message: fmt.Sprintf("%q: the percentage must be above 0 and below 100", e)})
		case seen[m[1]+m[2]]:
			errs = append(errs, sdk.ConfigError{Path: key, Message: fmt.Sprintf("%q: %s.avg%s is listed twice", e, m[1], m[2])})
		default:
			seen[m[1]+m[2]] = true
			out = append(out, l)
		}
	}
	return out, errs
}
