package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestExpandStatic(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "HOST", Value: "localhost"},
		{Name: "FROM_API", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "PORT", Value: "9090"}, // the later one wins
	}
	for _, c := range []struct {
		in, want string
	}{
		{"curl $(HOST):$(PORT)", "curl localhost:9090"},
		{"$(FROM_API)", ""},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(PORT)", "$(PORT)"},
		{"$$", "$"},
		{"cost $5", "cost $5"},
		{"end $", "end $"},
		{"$(PORT", "$(PORT"},
		{"$(unclosed $$", "$(unclosed $"},
		{"$(PORT)$(HOST)", "9090localhost"},
		{"héllo $(HOST) wörld", "héllo localhost wörld"},
		{"$é", "$é"},
	} {
		if got := ExpandStatic([]string{c.in}, env); !slices.Equal(got, []string{c.want}) {
			t.Errorf("ExpandStatic(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := ExpandStatic(nil, env); got != nil {
		t.Errorf("ExpandStatic(nil) = %q", got)
	}
}

func TestExpand(t *testing.T) {
	vars := MapLookup(map[string]string{"VAR_A": "A", "VAR_B": "B", "EMPTY": ""}, map[string]string{"VAR_A": "shadowed", "SVC": "svc"})
	for in, want := range map[string]string{
		"":                       "",
		"plain":                  "plain",
		"$(VAR_A)":               "A",
		"___$(VAR_B)___":         "___B___",
		"$(VAR_A)$(VAR_B)":       "AB",
		"$(SVC)":                 "svc",
		"$(EMPTY)x":              "x",
		"$(UNKNOWN)":             "$(UNKNOWN)",
		"$$(VAR_A)":              "$(VAR_A)",
		"$$$(VAR_A)":             "$A",
		"$$$$(VAR_A)":            "$$(VAR_A)",
		"$VAR_A":                 "$VAR_A",
		"$(VAR_A":                "$(VAR_A",
		"$(":                     "$(",
		"trailing$":              "trailing$",
		"$()":                    "$()",
		"$(VAR_A)$(":             "A$(",
		"unicode $é $(VAR_B) ok": "unicode $é B ok",
	} {
		if got := Expand(in, vars); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}
