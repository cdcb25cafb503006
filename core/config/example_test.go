package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/microlet/microlet/sdk"
)

const exampleFile = "../../examples/microlet.hcl"

// TestExampleDocumentsEveryKey keeps examples/microlet.hcl from drifting: it
// must set every key, to its default, and show one plugin block per kind.
func TestExampleDocumentsEveryKey(t *testing.T) {
	example, err := Load(LoadOptions{MainFile: exampleFile})
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	defaults, err := Load(LoadOptions{})
	if err != nil {
		t.Fatalf("defaults do not load: %v", err)
	}
	ev, dv := reflect.ValueOf(example).Elem(), reflect.ValueOf(defaults).Elem()

	for _, f := range agentSchema.fields {
		t.Run(f.key, func(t *testing.T) {
			pos, ok := example.Position(f.key)
			if !ok || pos.File != exampleFile {
				t.Fatalf("%s is not set in %s (position %v, %v)", f.key, exampleFile, pos, ok)
			}
			got, want := ev.FieldByIndex(f.index).Interface(), dv.FieldByIndex(f.index).Interface()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:%d sets %s to %#v; the default is %#v", exampleFile, pos.Line, f.key, got, want)
			}
		})
	}

	var kinds []string
	documented := map[string]bool{}
	for _, p := range example.Plugins {
		kinds = append(kinds, p.Kind)
		for _, f := range pluginSchema.fields {
			if _, ok := example.Position(joinKey(joinKey(joinKey(pluginKey, p.Kind), p.Name), f.key)); ok {
				documented[f.key] = true
			}
		}
	}
	if !slices.Equal(kinds, sdk.KnownKinds()) {
		t.Errorf("plugin blocks in the example have kinds %v, want one per kind %v", kinds, sdk.KnownKinds())
	}
	for _, f := range pluginSchema.fields {
		if !documented[f.key] {
			t.Errorf("plugin key %s is shown in no plugin block of the example", f.key)
		}
	}
}

// TestExampleCommentsEveryKey checks that each key line of the example has a
// comment line right above it.
func TestExampleCommentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	example, err := Load(LoadOptions{MainFile: exampleFile})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range agentSchema.fields {
		pos, _ := example.Position(f.key)
		if pos.Line < 2 || !strings.HasPrefix(strings.TrimSpace(lines[pos.Line-2]), "#") {
			t.Errorf("%s:%d: %s has no comment line above it", filepath.Base(exampleFile), pos.Line, f.key)
		}
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Load(LoadOptions{})
	if err != nil {
		t.Fatalf("Load with no sources: %v", err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.NodeName = strings.ToLower(host)
	want.ImageServiceEndpoint = want.ContainerRuntimeEndpoint
	want.PodPushSocket = "/var/lib/microlet/pods.sock"
	want.CertDir = "/var/lib/microlet/pki"
	want.positions = cfg.positions
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Load with no sources =\n%+v\nwant\n%+v", cfg, want)
	}
	for _, f := range agentSchema.fields {
		if pos, ok := cfg.Position(f.key); ok {
			t.Errorf("Position(%q) = %v for a default; want none", f.key, pos)
		}
	}
}

func TestDerivedDefaultsFollowTheirSource(t *testing.T) {
	cfg, _ := mustLoad(t, sources{main: `
node_name = " Worker-1 "
root_dir = "/srv/microlet"
container_runtime_endpoint = "unix:///run/crio/crio.sock"
plugin "devices" "gpu" {}
plugin "devices" "pinned" {
  binary = "gpu-plugin"
  sha256 = "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789"
}
`})
	checks := []struct{ name, got, want string }{
		{"node_name", cfg.NodeName, "worker-1"},
		{"image_service_endpoint", cfg.ImageServiceEndpoint, "unix:///run/crio/crio.sock"},
		{"pod_push_socket", cfg.PodPushSocket, "/srv/microlet/pods.sock"},
		{"cert_dir", cfg.CertDir, "/srv/microlet/pki"},
		{"default binary", cfg.Plugins[0].Binary, "microlet-devices-gpu"},
		{"set binary", cfg.Plugins[1].Binary, "gpu-plugin"},
		{"sha256 lowercased", cfg.Plugins[1].SHA256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}
