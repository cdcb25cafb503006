package pleg

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHealthy(t *testing.T) {
	tests := []struct {
		name    string
		relist  bool          // relist once at t0
		listErr error         // the relist's listing fails
		elapsed time.Duration // time after t0 when health is checked
		want    string        // "" for healthy, else the error
	}{
		{"before the first relist", false, nil, 0, "pleg has yet to be successful"},
		{"only failed relists", true, errors.New("down"), 0, "pleg has yet to be successful"},
		{"just relisted", true, nil, 0, ""},
		{"at the threshold", true, nil, 3 * time.Minute, ""},
		{"past the threshold", true, nil, 3*time.Minute + time.Second, "pleg was last seen active 3m1s ago; threshold is 3m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.runtime.setPods(pod("a", "sb"))
			h.runtime.listErr = tt.listErr
			if tt.relist {
				h.pleg.Relist(context.Background())
			}
			h.clock.Step(tt.elapsed)
			ok, err := h.pleg.Healthy()
			switch {
			case tt.want == "" && (!ok || err != nil):
				t.Errorf("Healthy() = %v, %v; want healthy", ok, err)
			case tt.want != "" && (ok || err == nil || err.Error() != tt.want):
				t.Errorf("Healthy() = %v, %v; want unhealthy: %s", ok, err, tt.want)
			}
		})
	}
}

func TestHealthyCustomThreshold(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RelistThreshold = time.Minute })
	h.pleg.Relist(context.Background())
	h.clock.Step(61 * time.Second)
	if ok, err := h.pleg.Healthy(); ok || err == nil || !strings.HasSuffix(err.Error(), "threshold is 1m0s") {
		t.Errorf("Healthy() = %v, %v; want the configured threshold", ok, err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	rt := newFakeRuntime()
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no runtime", func(c *Config) { c.Runtime = nil }, "Config.Runtime is nil"},
		{"no cache", func(c *Config) { c.Cache = nil }, "Config.Cache is nil"},
		{"events without a generator", func(c *Config) { c.Events = &fakeEvents{} }, "Config.EventStatus is nil"},
		{"negative period", func(c *Config) { c.RelistPeriod = -time.Second }, "Config.RelistPeriod is -1s"},
		{"threshold below period", func(c *Config) { c.RelistPeriod = time.Minute; c.RelistThreshold = 30 * time.Second }, "relist threshold 30s is not longer than the relist period 1m0s"},
		{"inspect timeout too long", func(c *Config) { c.InspectTimeout = 2 * time.Minute }, "inspect timeout 2m0s is longer than a third of the relist threshold (3m0s); expected at most 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			cfg := Config{Runtime: rt, Cache: h.cache}
			tt.mutate(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v; want it to say %q", err, tt.want)
			}
		})
	}
}
