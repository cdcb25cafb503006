package evictionengine

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/microlet/microlet/sdk"
)

// describe renders thresholds for comparison, with their minimum reclaim.
func describe(ts []Threshold) []string {
	var out []string
	for _, t := range ts {
		s := t.String()
		if t.MinReclaim != nil {
			s += " reclaim " + t.MinReclaim.String()
		}
		out = append(out, s)
	}
	return out
}

func configWith(edit func(*Config)) Config {
	var c Config
	c.SetDefaults()
	edit(&c)
	return c
}

func TestThresholdsParse(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{
			name: "kubelet defaults, with allocatable derived from memory.available",
			edit: func(*Config) {},
			want: []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%", "allocatableMemory.available<100Mi"},
		},
		{
			name: "setting hard replaces every default (the upstream trap)",
			edit: func(c *Config) { c.Hard = []string{"memory.available<500Mi"} },
			want: []string{"memory.available<500Mi", "allocatableMemory.available<500Mi"},
		},
		{
			name: "an empty hard list means no hard thresholds",
			edit: func(c *Config) { c.Hard = []string{} },
			want: nil,
		},
		{
			name: "merge_default_hard keeps defaults for signals hard does not list",
			edit: func(c *Config) {
				c.Hard = []string{"memory.available<500Mi", "nodefs.available<5%"}
				c.MergeDefaultHard = true
			},
			want: []string{"memory.available<500Mi", "nodefs.available<5%", "nodefs.inodesFree<5%", "imagefs.available<15%", "allocatableMemory.available<500Mi"},
		},
		{
			name: "0% switches a default off under merge, 100% is ignored too",
			edit: func(c *Config) {
				c.Hard = []string{"imagefs.available<0%", "nodefs.inodesFree<100%"}
				c.MergeDefaultHard = true
			},
			want: []string{"memory.available<100Mi", "nodefs.available<10%", "allocatableMemory.available<100Mi"},
		},
		{
			name: "an explicit allocatable threshold wins over the derived one",
			edit: func(c *Config) { c.Hard = []string{"memory.available<100Mi", "allocatableMemory.available<200Mi"} },
			want: []string{"memory.available<100Mi", "allocatableMemory.available<200Mi"},
		},
		{
			name: "allocatable switched off with 0%",
			edit: func(c *Config) { c.Hard = []string{"memory.available<100Mi", "allocatableMemory.available<0%"} },
			want: []string{"memory.available<100Mi"},
		},
		{
			name: "quantities are canonicalised, blanks trimmed, fractions and counts kept",
			edit: func(c *Config) {
				c.Hard = []string{" memory.available < 1024Mi ", "nodefs.available<7.5%", "pid.available<1000", "imagefs.inodesFree<5k"}
			},
			want: []string{"memory.available<1Gi", "nodefs.available<7.5%", "pid.available<1k", "imagefs.inodesFree<5k", "allocatableMemory.available<1Gi"},
		},
		{
			name: "soft thresholds with their grace periods come after hard ones",
			edit: func(c *Config) {
				c.Hard = []string{"memory.available<100Mi"}
				c.Soft = []string{"nodefs.available<15%", "memory.available<300Mi"}
				c.SoftGracePeriod = []string{"memory.available=1m30s", "nodefs.available=2m"}
			},
			want: []string{"memory.available<100Mi", "allocatableMemory.available<100Mi", "nodefs.available<15% for 2m0s", "memory.available<300Mi for 1m30s"},
		},
		{
			name: "minimum reclaim applies to every threshold of its signal; the derived allocatable inherits memory's",
			edit: func(c *Config) {
				c.Soft = []string{"memory.available<300Mi"}
				c.SoftGracePeriod = []string{"memory.available=30s"}
				c.MinimumReclaim = []string{"memory.available=0Mi", "nodefs.available=500Mi", "imagefs.available=2%"}
			},
			want: []string{
				"memory.available<100Mi reclaim 0", "nodefs.available<10% reclaim 500Mi", "nodefs.inodesFree<5%",
				"imagefs.available<15% reclaim 2%", "allocatableMemory.available<100Mi reclaim 0", "memory.available<300Mi for 30s reclaim 0",
			},
		},
		{
			name: "allocatable's own minimum reclaim overrides the inherited one",
			edit: func(c *Config) {
				c.Hard = []string{"memory.available<100Mi"}
				c.MinimumReclaim = []string{"memory.available=50Mi", "allocatableMemory.available=200Mi"}
			},
			want: []string{"memory.available<100Mi reclaim 50Mi", "allocatableMemory.available<100Mi reclaim 200Mi"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := configWith(tt.edit)
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := cfg.Thresholds()
			if err != nil {
				t.Fatalf("Thresholds: %v", err)
			}
			if !slices.Equal(describe(got), tt.want) {
				t.Errorf("thresholds:\n got  %q\n want %q", describe(got), tt.want)
			}
		})
	}
}

func TestThresholdsValues(t *testing.T) {
	cfg := configWith(func(c *Config) { c.Hard = []string{"memory.available<1.5Gi", "nodefs.available<10%"} })
	ts, err := cfg.Thresholds()
	if err != nil {
		t.Fatal(err)
	}
	if got := ts[0].Value.resolve(0); got != 1536<<20 {
		t.Errorf("1.5Gi resolves to %d bytes, want %d", got, 1536<<20)
	}
	// 10% parsed as a float32, as the kubelet does, then applied in float64.
	if got, want := ts[1].Value.resolve(100<<30), int64(float64(100<<30)*float64(float32(10)/100)); got != want {
		t.Errorf("10%% of 100Gi resolves to %d, want the kubelet's %d", got, want)
	}
	if ts[0].Hard() != true || ts[0].GracePeriod != 0 {
		t.Errorf("hard threshold has grace period %v", ts[0].GracePeriod)
	}
}

func TestThresholdsReject(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want sdk.ConfigErrors
	}{
		{
			name: "wrong operator",
			edit: func(c *Config) { c.Hard = []string{"memory.available>100Mi"} },
			want: sdk.ConfigErrors{{Path: "hard", Message: `"memory.available>100Mi": expected <signal><<value>, such as "memory.available<100Mi"`}},
		},
		{
			name: "no value",
			edit: func(c *Config) { c.Hard = []string{"memory.available<"} },
			want: sdk.ConfigErrors{{Path: "hard", Message: `"memory.available<": expected <signal><<value>, such as "memory.available<100Mi"`}},
		},
		{
			name: "unknown signal",
			edit: func(c *Config) { c.Hard = []string{"memory.free<100Mi"} },
			want: sdk.ConfigErrors{{Path: "hard", Message: `"memory.free<100Mi": unsupported eviction signal "memory.free"; supported: memory.available, allocatableMemory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available`}},
		},
		{
			name: "containerfs",
			edit: func(c *Config) { c.Hard = []string{"containerfs.available<10%"} },
			want: sdk.ConfigErrors{{Path: "hard", Message: `"containerfs.available<10%": containerfs signals cannot be set: they follow nodefs or imagefs, as in the kubelet`}},
		},
		{
			name: "bad quantity for bytes and for counts",
			edit: func(c *Config) { c.Hard = []string{"memory.available<lots", "nodefs.inodesFree<many"} },
			want: sdk.ConfigErrors{
				{Path: "hard", Message: `"memory.available<lots": "lots" is neither a quantity such as "100Mi" nor a percentage such as "10%"`},
				{Path: "hard", Message: `"nodefs.inodesFree<many": "many" is neither a count such as "1000" or "5k" nor a percentage such as "10%"`},
			},
		},
		{
			name: "threshold not above zero",
			edit: func(c *Config) { c.Hard = []string{"memory.available<0", "nodefs.available<-1Gi"} },
			want: sdk.ConfigErrors{
				{Path: "hard", Message: `"memory.available<0": the threshold must be greater than 0`},
				{Path: "hard", Message: `"nodefs.available<-1Gi": the threshold must be greater than 0`},
			},
		},
		{
			name: "percentages out of range or malformed",
			edit: func(c *Config) {
				c.Hard = []string{"nodefs.available<150%", "imagefs.available<-5%", "pid.available<x%"}
			},
			want: sdk.ConfigErrors{
				{Path: "hard", Message: `"nodefs.available<150%": a percentage threshold must be greater than 0% and at most 100%`},
				{Path: "hard", Message: `"imagefs.available<-5%": a percentage threshold must be greater than 0% and at most 100%`},
				{Path: "hard", Message: `"pid.available<x%": "x%" is not a percentage such as "10%"`},
			},
		},
		{
			name: "a signal listed twice",
			edit: func(c *Config) {
				c.Soft = []string{"memory.available<300Mi", "memory.available<200Mi"}
				c.SoftGracePeriod = []string{"memory.available=1m"}
			},
			want: sdk.ConfigErrors{{Path: "soft", Message: `"memory.available<200Mi": memory.available is listed twice in soft`}},
		},
		{
			name: "a soft threshold without a grace period",
			edit: func(c *Config) { c.Soft = []string{"memory.available<300Mi"} },
			want: sdk.ConfigErrors{{Path: "soft_grace_period", Message: `the soft threshold "memory.available<300Mi" has no grace period; add "memory.available=<duration>"`}},
		},
		{
			name: "a grace period without a soft threshold",
			edit: func(c *Config) { c.SoftGracePeriod = []string{"nodefs.available=1m"} },
			want: sdk.ConfigErrors{{Path: "soft_grace_period", Message: `"nodefs.available=1m": soft has no nodefs.available threshold for this grace period to apply to`}},
		},
		{
			name: "bad grace periods",
			edit: func(c *Config) {
				c.Soft = []string{"memory.available<300Mi", "nodefs.available<20%", "pid.available<10%"}
				c.SoftGracePeriod = []string{"memory.available=soon", "nodefs.available=0s", "pid.available<1m", "pid.available=-1s"}
			},
			want: sdk.ConfigErrors{
				{Path: "soft_grace_period", Message: `"memory.available=soon": "soon" is not a duration such as "1m30s"`},
				{Path: "soft_grace_period", Message: `"nodefs.available=0s": a grace period must be greater than 0s; a threshold that acts at once belongs in hard`},
				{Path: "soft_grace_period", Message: `"pid.available<1m": expected <signal>=<value>, such as "memory.available=1m30s"`},
				{Path: "soft_grace_period", Message: `"pid.available=-1s": a grace period must be greater than 0s; a threshold that acts at once belongs in hard`},
				{Path: "soft_grace_period", Message: `the soft threshold "memory.available<300Mi" has no grace period; add "memory.available=<duration>"`},
				{Path: "soft_grace_period", Message: `the soft threshold "nodefs.available<20%" has no grace period; add "nodefs.available=<duration>"`},
				{Path: "soft_grace_period", Message: `the soft threshold "pid.available<10%" has no grace period; add "pid.available=<duration>"`},
			},
		},
		{
			name: "bad minimum reclaims",
			edit: func(c *Config) {
				c.MinimumReclaim = []string{"memory.available=-1Mi", "nodefs.available=0%", "pid.available=100", "imagefs.available=2Gi", "imagefs.available=1Gi"}
			},
			want: sdk.ConfigErrors{
				{Path: "minimum_reclaim", Message: `"memory.available=-1Mi": a minimum reclaim must not be negative`},
				{Path: "minimum_reclaim", Message: `"nodefs.available=0%": a percentage minimum reclaim must be greater than 0%`},
				{Path: "minimum_reclaim", Message: `"imagefs.available=1Gi": imagefs.available is listed twice in minimum_reclaim`},
				{Path: "minimum_reclaim", Message: `"pid.available=100": neither hard nor soft has a pid.available threshold for this minimum reclaim to apply to`},
			},
		},
		{
			name: "durations",
			edit: func(c *Config) {
				c.MaxPodGracePeriod = sdk.Duration{Duration: 1500 * time.Millisecond}
				c.PressureTransitionPeriod = sdk.Duration{Duration: -time.Second}
			},
			want: sdk.ConfigErrors{
				{Path: "max_pod_grace_period", Message: `expected a whole number of seconds, 0s or more, such as "30s"; got 1.5s`},
				{Path: "pressure_transition_period", Message: `expected a duration of 0s or more, such as "5m"; got -1s`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := configWith(tt.edit)
			err := cfg.Validate()
			var got sdk.ConfigErrors
			if !errors.As(err, &got) {
				t.Fatalf("Validate() = %v, want sdk.ConfigErrors", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got  %q\n want %q", got, tt.want)
			}
			if _, err := New(cfg, fifo{}); err == nil {
				t.Error("New accepted a config Validate rejects")
			}
		})
	}
}
