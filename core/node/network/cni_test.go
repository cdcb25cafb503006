package network

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// fakePlugins makes a bin dir holding executables of the given names.
func fakePlugins(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheck(t *testing.T) {
	bridge := `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"},{"type":"portmap"}]}`
	tests := []struct {
		name    string
		files   map[string]string // nil: the conf dir does not exist
		bins    []string
		wantErr string
	}{
		{"good conflist", map[string]string{"10-n.conflist": bridge}, []string{"bridge", "portmap"}, ""},
		{"single .conf", map[string]string{"10-n.conf": `{"cniVersion":"1.0.0","name":"n","type":"bridge"}`}, []string{"bridge"}, ""},
		{"no dir", nil, nil, "does not exist"},
		{"empty dir", map[string]string{}, nil, "no CNI network config in"},
		{"other files ignored", map[string]string{"README": "x"}, nil, "no CNI network config in"},
		{"broken file", map[string]string{"10-n.conflist": `{"name": `}, nil, "10-n.conflist"},
		{"missing plugin", map[string]string{"10-n.conflist": bridge}, []string{"bridge"}, `plugin "portmap" not found`},
		{"first file wins", map[string]string{"05-a.conflist": bridge, "10-b.conflist": `{"name": `}, []string{"bridge", "portmap"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			confDir := filepath.Join(t.TempDir(), "net.d")
			if tt.files != nil {
				if err := os.Mkdir(confDir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, content := range tt.files {
					if err := os.WriteFile(filepath.Join(confDir, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := Check(confDir, []string{fakePlugins(t, tt.bins...)})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestWriteBridgeConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d")
	wrote, err := WriteBridgeConfig(dir, "10.244.3.0/24,fd00:10:244:3::/64", "microlet0")
	if err != nil || !wrote {
		t.Fatalf("WriteBridgeConfig = %v, %v", wrote, err)
	}
	list, err := libcni.ConfListFromFile(filepath.Join(dir, BridgeConfigFile))
	if err != nil {
		t.Fatalf("written config does not load: %v", err)
	}
	if len(list.Plugins) != 2 || list.Plugins[0].Network.Type != "bridge" || list.Plugins[1].Network.Type != "portmap" {
		t.Fatalf("plugins: %+v", list.Plugins)
	}
	raw := string(list.Plugins[0].Bytes)
	for _, want := range []string{`"subnet":"10.244.3.0/24"`, `"subnet":"fd00:10:244:3::/64"`, `"dst":"::/0"`, `"bridge":"microlet0"`} {
		if !strings.Contains(strings.ReplaceAll(raw, " ", ""), want) {
			t.Errorf("bridge config lacks %s: %s", want, raw)
		}
	}
	if err := Check(dir, []string{fakePlugins(t, "bridge", "portmap", "host-local")}); err != nil {
		t.Errorf("written config fails the check: %v", err)
	}
	// An existing network is left alone.
	wrote, err = WriteBridgeConfig(dir, "10.1.0.0/24", "other0")
	if err != nil || wrote {
		t.Errorf("second write = %v, %v; want no write", wrote, err)
	}
	if _, err := WriteBridgeConfig(t.TempDir(), "not-a-cidr", "x"); err == nil {
		t.Error("a bad CIDR must be refused")
	}
}
