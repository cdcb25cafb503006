package prober

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
		if got := expandStatic([]string{c.in}, env); !slices.Equal(got, []string{c.want}) {
			t.Errorf("expandStatic(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := expandStatic(nil, env); got != nil {
		t.Errorf("expandStatic(nil) = %q", got)
	}
}
