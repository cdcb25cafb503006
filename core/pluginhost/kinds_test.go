package pluginhost

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/microlet/microlet/sdk"
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
	var names []string
	for _, info := range Kinds() {
		names = append(names, string(info.Kind))
		if len(info.APIVersions) == 0 || info.Fallback == "" || strings.Contains(info.Fallback, "\n") {
			t.Errorf("kind %q = %+v: want API versions and a one-line fallback", info.Kind, info)
		}
		if info.Singleton != (info.Kind != Devices) {
			t.Errorf("kind %q: Singleton = %v; only devices has a slot per name", info.Kind, info.Singleton)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, sdk.KnownKinds()) {
		t.Errorf("the host knows kinds %v, the SDK serves %v", names, sdk.KnownKinds())
	}
}

// TestArchitectureShowsTheFallbacks keeps ARCHITECTURE.md's "Failure policy
// per kind" table the text operators read: same kinds, same order, same
// words.
func TestArchitectureShowsTheFallbacks(t *testing.T) {
	doc, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Failure policy per kind\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no \"Failure policy per kind\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var want strings.Builder
	want.WriteString("| Kind | Fallback |\n|---|---|\n")
	for _, info := range Kinds() {
		fmt.Fprintf(&want, "| %s | %s |\n", info.Kind, info.Fallback)
	}
	if !strings.Contains(section, want.String()) {
		t.Errorf("ARCHITECTURE.md's failure policy table is not the kinds' fallbacks; it should read:\n%s", want.String())
	}
}
