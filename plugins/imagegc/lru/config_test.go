package lru

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/microlet/microlet/sdk"
)

func TestConfigDefaults(t *testing.T) {
	c := defaults()
	want := Config{HighThresholdPercent: 85, LowThresholdPercent: 80, MinimumAge: sdk.Duration{Duration: 2 * time.Minute}, MaxPerPodContainer: 1, MaxContainers: -1}
	if c != want {
		t.Errorf("defaults = %+v, want the kubelet's %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want sdk.ConfigErrors
	}{
		{"edges accepted", func(c *Config) {
			c.HighThresholdPercent, c.LowThresholdPercent = 100, 0
			c.MaximumAge.Duration = time.Hour
		}, nil},
		{"no limits accepted", func(c *Config) { c.MaxPerPodContainer, c.MaxContainers = -1, -1 }, nil},
		{"percentages out of range", func(c *Config) { c.HighThresholdPercent, c.LowThresholdPercent = 101, -1 }, sdk.ConfigErrors{
			{Path: "high_threshold_percent", Message: "expected a percentage from 0 to 100, got 101"},
			{Path: "low_threshold_percent", Message: "expected a percentage from 0 to 100, got -1"},
		}},
		{"low not below high", func(c *Config) { c.LowThresholdPercent = 85 }, sdk.ConfigErrors{
			{Path: "low_threshold_percent", Message: "must be less than high_threshold_percent (85), got 85"},
		}},
		{"negative durations", func(c *Config) {
			c.MinimumAge.Duration, c.ContainerMinimumAge.Duration = -time.Second, -time.Minute
		}, sdk.ConfigErrors{
			{Path: "minimum_age", Message: "expected a duration of 0s or more, got -1s"},
			{Path: "container_minimum_age", Message: "expected a duration of 0s or more, got -1m0s"},
		}},
		{"maximum_age not above minimum_age", func(c *Config) { c.MaximumAge.Duration = 2 * time.Minute }, sdk.ConfigErrors{
			{Path: "maximum_age", Message: "must be greater than minimum_age (2m0s), or 0s to switch it off; got 2m0s"},
		}},
		{"counts below -1", func(c *Config) { c.MaxPerPodContainer, c.MaxContainers = -2, -3 }, sdk.ConfigErrors{
			{Path: "max_per_pod_container", Message: "expected a count of 0 or more, or -1 for no limit; got -2"},
			{Path: "max_containers", Message: "expected a count of 0 or more, or -1 for no limit; got -3"},
		}},
	}
	for _, tt := range tests {
		c := defaults()
		tt.edit(&c)
		err := c.Validate()
		var got sdk.ConfigErrors
		if err != nil && !errors.As(err, &got) {
			t.Fatalf("%s: Validate() = %v, want sdk.ConfigErrors", tt.name, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got  %q\n want %q", tt.name, got, tt.want)
		}
	}
}
