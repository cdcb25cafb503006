package pluginhost

import (
	"strings"
	"testing"
)

func TestChooseAPIVersion(t *testing.T) {
	tests := []struct {
		core, plugin []string
		want         string
		wantErr      string
	}{
		{core: []string{"v1"}, plugin: []string{"v1"}, want: "v1"},
		{core: []string{"v1", "v2"}, plugin: []string{"v2", "v1"}, want: "v2"},
		{core: []string{"v1", "v2"}, plugin: []string{"v1", "v3"}, want: "v1"},
		{core: []string{"v1beta1", "v1", "v1alpha1"}, plugin: []string{"v1alpha1", "v1beta1", "v1"}, want: "v1"},
		{core: []string{"v1alpha1", "v1beta2"}, plugin: []string{"v1alpha1", "v1beta2"}, want: "v1beta2"},
		{core: []string{"v1"}, plugin: []string{"v2"}, wantErr: "serves eviction API versions [v2] but this core speaks [v1]"},
		{core: []string{"v1"}, plugin: nil, wantErr: "no version in common"},
	}
	for _, tt := range tests {
		got, err := chooseAPIVersion("eviction", tt.core, tt.plugin)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("core %v, plugin %v: error %v, want %q", tt.core, tt.plugin, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("core %v, plugin %v: %q, %v; want %q", tt.core, tt.plugin, got, err, tt.want)
		}
	}
}

func TestKindsAreComplete(t *testing.T) {
	for _, kind := range []string{"eviction", "imagegc", "probes", "cgroup", "devices", "stats"} {
		info, ok := Kinds[kind]
		if !ok || len(info.APIVersions) == 0 || info.Fallback == "" || strings.Contains(info.Fallback, "\n") {
			t.Errorf("Kinds[%q] = %+v, %v: want API versions and a one-line fallback", kind, info, ok)
		}
		if info.Singleton != (kind != "devices") {
			t.Errorf("Kinds[%q].Singleton = %v; only devices has a slot per name", kind, info.Singleton)
		}
	}
}
