package evictionengine

import (
	"fmt"
	"time"

	"github.com/microlet/microlet/sdk"
)

// DefaultHard is the kubelet's Linux default for evictionHard
// (pkg/kubelet/eviction/defaults_linux.go).
var DefaultHard = []string{
	"memory.available<100Mi",
	"nodefs.available<10%",
	"nodefs.inodesFree<5%",
	"imagefs.available<15%",
}

// DefaultPressureTransitionPeriod is the kubelet's default
// evictionPressureTransitionPeriod.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// Config is the eviction config block shared by every strategy. Keys are the
// kubelet's KubeletConfiguration fields in snake_case, values are written
// as the kubelet's flags take them.
type Config struct {
	// Hard thresholds (evictionHard), e.g. "memory.available<100Mi".
	Hard []string `json:"hard"`
	// MergeDefaultHard (mergeDefaultEvictionSettings): when false, setting
	// hard replaces DefaultHard entirely, so a node configured with only
	// "memory.available<500Mi" has no disk thresholds at all. When true,
	// default thresholds for signals hard does not list are kept.
	MergeDefaultHard bool `json:"merge_default_hard"`
	// Soft thresholds (evictionSoft), e.g. "memory.available<300Mi".
	Soft []string `json:"soft"`
	// SoftGracePeriod (evictionSoftGracePeriod), e.g. "memory.available=1m30s";
	// every soft threshold needs one.
	SoftGracePeriod []string `json:"soft_grace_period"`
	// MaxPodGracePeriod (evictionMaxPodGracePeriod) caps the termination
	// grace period of pods evicted for a soft threshold; whole seconds.
	MaxPodGracePeriod sdk.Duration `json:"max_pod_grace_period"`
	// MinimumReclaim (evictionMinimumReclaim), e.g. "nodefs.available=500Mi".
	MinimumReclaim []string `json:"minimum_reclaim"`
	// PressureTransitionPeriod (evictionPressureTransitionPeriod): how long a
	// pressure condition stays True after its thresholds were last met.
	PressureTransitionPeriod sdk.Duration `json:"pressure_transition_period"`
}

// SetDefaults applies the kubelet's defaults; the SDK calls it before decoding.
func (c *Config) SetDefaults() {
	c.Hard = append([]string(nil), DefaultHard...)
	c.PressureTransitionPeriod = sdk.Duration{Duration: DefaultPressureTransitionPeriod}
}

// Validate reports every problem of the block; the SDK calls it after decoding.
func (c *Config) Validate() error {
	if _, err := c.Thresholds(); err != nil {
		return err
	}
	return nil
}

// Thresholds parses the block into thresholds: hard ones first, in the
// order written, then soft ones. The error, when not nil, is sdk.ConfigErrors
// naming every bad entry.
func (c *Config) Thresholds() ([]Threshold, error) {
	var p parser
	if c.MaxPodGracePeriod.Duration < 0 || c.MaxPodGracePeriod.Duration%time.Second != 0 {
		p.errs = append(p.errs, sdk.ConfigError{Path: "max_pod_grace_period",
			Message: "expected a whole number of seconds, 0s or more, such as \"30s\"; got " + c.MaxPodGracePeriod.String()})
	}
	if c.PressureTransitionPeriod.Duration < 0 {
		p.errs = append(p.errs, sdk.ConfigError{Path: "pressure_transition_period",
			Message: "expected a duration of 0s or more, such as \"5m\"; got " + c.PressureTransitionPeriod.String()})
	}

	hard := p.thresholds("hard", c.Hard)
	if c.MergeDefaultHard {
		for _, st := range p.thresholds("hard", DefaultHard) {
			if _, listed := hard.find(st.signal); !listed {
				hard = append(hard, st)
			}
		}
	}
	soft := p.thresholds("soft", c.Soft)
	graces := p.gracePeriods("soft_grace_period", c.SoftGracePeriod)
	reclaims := p.minimumReclaims("minimum_reclaim", c.MinimumReclaim)

	var hardOut, softOut []Threshold
	for _, st := range hard {
		if st.value != nil {
			hardOut = append(hardOut, Threshold{Signal: st.signal, Value: *st.value})
		}
	}
	for _, st := range soft {
		g, ok := graces.find(st.signal)
		if !ok {
			p.errs = append(p.errs, sdk.ConfigError{Path: "soft_grace_period",
				Message: fmt.Sprintf("the soft threshold %q has no grace period; add \"%s=<duration>\"", st.text, st.signal)})
			continue
		}
		if st.value != nil {
			softOut = append(softOut, Threshold{Signal: st.signal, Value: *st.value, GracePeriod: g.period})
		}
	}
	for _, g := range graces {
		if _, ok := soft.find(g.signal); !ok {
			p.fail("soft_grace_period", g.text, "soft has no %s threshold for this grace period to apply to", g.signal)
		}
	}
	out := append(withAllocatable(withMinimumReclaims(hardOut, reclaims), hard, reclaims), withMinimumReclaims(softOut, reclaims)...)
	for _, r := range reclaims {
		_, inHard := hard.find(r.signal)
		_, inSoft := soft.find(r.signal)
		if !inHard && !inSoft && !hasSignal(out, r.signal) {
			p.fail("minimum_reclaim", r.text, "neither hard nor soft has a %s threshold for this minimum reclaim to apply to", r.signal)
		}
	}

	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return out, nil
}

// withAllocatable adds a hard allocatableMemory.available threshold copied
// from the hard memory.available one, as the kubelet does when it enforces
// node allocatable for pods (enforceNodeAllocatable contains "pods", the
// default). An allocatableMemory.available entry in hard wins; writing
// "allocatableMemory.available<0%" switches the signal off. The copy takes
// memory.available's minimum reclaim unless allocatableMemory.available has
// one of its own.
func withAllocatable(out []Threshold, hard, reclaims statementList) []Threshold {
	if _, explicit := hard.find(SignalAllocatableMemoryAvailable); explicit {
		return out
	}
	for _, t := range out {
		if t.Signal == SignalMemoryAvailable && t.Hard() {
			t.Signal = SignalAllocatableMemoryAvailable
			if r, ok := reclaims.find(SignalAllocatableMemoryAvailable); ok {
				t.MinReclaim = r.value
			}
			return append(out, t)
		}
	}
	return out
}

// withMinimumReclaims sets each threshold's minimum reclaim from its signal's entry.
func withMinimumReclaims(ts []Threshold, reclaims statementList) []Threshold {
	for i := range ts {
		if r, ok := reclaims.find(ts[i].Signal); ok {
			ts[i].MinReclaim = r.value
		}
	}
	return ts
}

func hasSignal(ts []Threshold, s Signal) bool {
	for _, t := range ts {
		if t.Signal == s {
			return true
		}
	}
	return false
}
