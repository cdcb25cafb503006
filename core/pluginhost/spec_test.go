package pluginhost

import (
	"slices"
	"strings"
	"testing"
)

func TestResolveSpec(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		wantErr []string
		check   func(t *testing.T, r resolvedSpec)
	}{
		{
			name: "defaults the binary name",
			spec: Spec{Kind: "eviction", Name: "largest"},
			check: func(t *testing.T, r resolvedSpec) {
				if r.Binary != "microlet-eviction-largest" {
					t.Errorf("binary %q", r.Binary)
				}
			},
		},
		{
			name: "normalises the pin and converts typed config",
			spec: Spec{Kind: "devices", Name: "gpu", SHA256: strings.Repeat("AB", 32), Config: map[string]any{
				"limit": 3, "blocks": []map[string]any{{"x": true}},
			}},
			check: func(t *testing.T, r resolvedSpec) {
				if r.SHA256 != strings.Repeat("ab", 32) {
					t.Errorf("sha256 %q", r.SHA256)
				}
				if got := r.config.GetFields()["limit"].GetNumberValue(); got != 3 {
					t.Errorf("config limit = %v", got)
				}
				if got := r.config.GetFields()["blocks"].GetListValue().GetValues()[0].GetStructValue().GetFields()["x"].GetBoolValue(); !got {
					t.Errorf("config blocks[0].x = %v", got)
				}
			},
		},
		{
			name:    "every problem at once",
			spec:    Spec{Kind: "evictoin", Name: "Big_One", SHA256: "abc", Binary: "../x", Env: map[string]string{"PLUGIN_MIN_PORT": "1", "A=B": "c"}},
			wantErr: []string{"plugin evictoin/Big_One", `unknown kind "evictoin"`, `name "Big_One"`, `sha256 "abc": expected 64 hexadecimal digits`, `binary "../x"`, `env key "PLUGIN_MIN_PORT"`, `env key "A=B"`},
		},
		{
			name:    "reserved transport variable",
			spec:    Spec{Kind: "stats", Name: "x", Env: map[string]string{"MICROLET_PLUGIN_KIND": "eviction"}},
			wantErr: []string{"reserved for the plugin handshake"},
		},
		{
			name:    "config that is not JSON-like",
			spec:    Spec{Kind: "stats", Name: "x", Config: map[string]any{"f": func() {}}},
			wantErr: []string{"config:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := resolveSpec(tt.spec)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, r)
				return
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to mention %q", err, want)
				}
			}
		})
	}
}

func TestSpecDiff(t *testing.T) {
	base := Spec{Kind: "eviction", Name: "a", Args: []string{"-v"}, Env: map[string]string{"A": "1"}, Config: map[string]any{"n": 1}}
	tests := []struct {
		name   string
		change func(s *Spec)
		want   []string
	}{
		{"nothing", func(*Spec) {}, nil},
		{"config equal by value", func(s *Spec) { s.Config = map[string]any{"n": 1.0} }, nil},
		{"env removed", func(s *Spec) { s.Env = nil }, []string{"env"}},
		{"name", func(s *Spec) { s.Name = "b" }, []string{"name", "binary"}},
		{"explicit binary", func(s *Spec) { s.Binary = "other" }, []string{"binary"}},
		{"pin", func(s *Spec) { s.SHA256 = strings.Repeat("0", 64) }, []string{"sha256"}},
		{"args", func(s *Spec) { s.Args = []string{"-v", "-x"} }, []string{"args"}},
		{"env", func(s *Spec) { s.Env = map[string]string{"A": "2"} }, []string{"env"}},
		{"config", func(s *Spec) { s.Config = map[string]any{"n": 2} }, []string{"config"}},
		{"several", func(s *Spec) { s.Args = nil; s.Config = nil }, []string{"args", "config"}},
	}
	old := mustResolve(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base
			changed.Env = map[string]string{"A": "1"}
			tt.change(&changed)
			if got := specDiff(old, mustResolve(t, changed)); !slices.Equal(got, tt.want) {
				t.Errorf("diff = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProcessEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want []string
	}{
		{nil, []string{
			"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
			"MICROLET_PLUGIN_LOG_LEVEL=debug", "MICROLET_PLUGIN_KIND=probes", "MICROLET_PLUGIN_NAME=exec",
		}},
		{map[string]string{"PATH": "/opt/bin", "B": "2", "A": "1"}, []string{
			"A=1", "B=2", "PATH=/opt/bin",
			"MICROLET_PLUGIN_LOG_LEVEL=debug", "MICROLET_PLUGIN_KIND=probes", "MICROLET_PLUGIN_NAME=exec",
		}},
	}
	for _, tt := range tests {
		got := processEnv(mustResolve(t, Spec{Kind: "probes", Name: "exec", Env: tt.env}), "debug")
		if !slices.Equal(got, tt.want) {
			t.Errorf("env %v: got %q, want %q", tt.env, got, tt.want)
		}
	}
}

func mustResolve(t *testing.T, s Spec) resolvedSpec {
	t.Helper()
	r, err := resolveSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
