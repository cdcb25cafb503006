package pluginhost

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestPlanReconcile(t *testing.T) {
	tests := []struct {
		name       string
		current    []string
		specs      []Spec
		wantApply  map[string]string // slot key -> spec
		wantRemove []string
		wantErr    []string
	}{
		{
			name:      "start new slots",
			specs:     []Spec{{Kind: "eviction", Name: "a"}, {Kind: "devices", Name: "gpu"}, {Kind: "devices", Name: "nic"}},
			wantApply: map[string]string{"eviction": "eviction/a", "devices/gpu": "devices/gpu", "devices/nic": "devices/nic"},
		},
		{
			name:       "remove slots no spec names",
			current:    []string{"eviction", "devices/gpu", "stats"},
			specs:      []Spec{{Kind: "devices", Name: "gpu"}},
			wantApply:  map[string]string{"devices/gpu": "devices/gpu"},
			wantRemove: []string{"eviction", "stats"},
		},
		{
			name:      "a new name of a singleton kind takes the same slot",
			current:   []string{"eviction"},
			specs:     []Spec{{Kind: "eviction", Name: "b"}},
			wantApply: map[string]string{"eviction": "eviction/b"},
		},
		{
			name:      "a second plugin of a singleton kind is refused",
			specs:     []Spec{{Kind: "eviction", Name: "a"}, {Kind: "eviction", Name: "b"}},
			wantApply: map[string]string{"eviction": "eviction/a"},
			wantErr:   []string{"plugin eviction/b: eviction takes one plugin and eviction/a is configured already"},
		},
		{
			name:      "a device plugin configured twice",
			specs:     []Spec{{Kind: "devices", Name: "gpu"}, {Kind: "devices", Name: "gpu", Args: []string{"-x"}}},
			wantApply: map[string]string{"devices/gpu": "devices/gpu"},
			wantErr:   []string{"plugin devices/gpu: configured twice"},
		},
		{
			name:      "an invalid spec keeps its running slot and does not block others",
			current:   []string{"eviction", "stats"},
			specs:     []Spec{{Kind: "eviction", Name: "a", SHA256: "nope"}, {Kind: "stats", Name: "s"}},
			wantApply: map[string]string{"stats": "stats/s"},
			wantErr:   []string{"plugin eviction/a", "sha256"},
		},
		{
			name:       "an unknown kind is refused",
			current:    []string{"stats"},
			specs:      []Spec{{Kind: "gpu", Name: "x"}},
			wantApply:  map[string]string{},
			wantRemove: []string{"stats"},
			wantErr:    []string{`unknown kind "gpu"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planReconcile(tt.current, tt.specs)
			got := map[string]string{}
			for key, spec := range plan.apply {
				got[key] = spec.String()
			}
			if !maps.Equal(got, tt.wantApply) {
				t.Errorf("apply %v, want %v", got, tt.wantApply)
			}
			if !slices.Equal(plan.remove, tt.wantRemove) {
				t.Errorf("remove %v, want %v", plan.remove, tt.wantRemove)
			}
			if len(tt.wantErr) == 0 && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to mention %q", err, want)
				}
			}
		})
	}
}
