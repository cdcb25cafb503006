package devnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegistryHosts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs.d")
	got, err := writeRegistryHosts(dir, map[string]string{"127.0.0.1:5000": "/ca/reg.crt"})
	if err != nil || got != dir {
		t.Fatalf("writeRegistryHosts = %q, %v; want %q", got, err, dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, "127.0.0.1:5000", "hosts.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := "server = \"https://127.0.0.1:5000\"\n\n[host.\"https://127.0.0.1:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/ca/reg.crt\"\n"
	if string(data) != want {
		t.Errorf("hosts.toml:\n%s\nwant:\n%s", data, want)
	}
	config, err := containerdConfig{RegistryConfigPath: dir}.render()
	if err != nil || !strings.Contains(string(config), "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = \""+dir+"\"") {
		t.Errorf("config without the registry config_path:\n%s", config)
	}

	if got, err := writeRegistryHosts(dir, nil); got != "" || err != nil {
		t.Errorf("no registries: %q, %v; want nothing", got, err)
	}
	if config, _ := (containerdConfig{}).render(); strings.Contains(string(config), "registry") {
		t.Errorf("config with a registry section and no registries:\n%s", config)
	}
	for _, bad := range []map[string]string{{"": "/ca"}, {"a/b": "/ca"}, {"reg": "relative.crt"}} {
		if _, err := writeRegistryHosts(t.TempDir(), bad); err == nil {
			t.Errorf("writeRegistryHosts(%v) accepted it", bad)
		}
	}
}
