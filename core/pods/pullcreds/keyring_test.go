package pullcreds

import (
	"encoding/base64"
	"testing"
)

func TestURLsMatch(t *testing.T) {
	// Upstream's TestURLsMatch cases (pkg/credentialprovider/keyring_test.go).
	tests := []struct {
		glob, target string
		want         bool
	}{
		{"*.kubernetes.io", "prefix.kubernetes.io", true},
		{"prefix.*.io", "prefix.kubernetes.io", true},
		{"prefix.kubernetes.*", "prefix.kubernetes.io", true},
		{"*-good.kubernetes.io", "prefix-good.kubernetes.io", true},
		{"*.kubernetes.io", "kubernetes.io", false},
		{"*.*.io", "prefix.kubernetes.io", true},
		{"*.*.io", "kubernetes.io", false},
		{"*.io", "prefix.kubernetes.io", false},
		{"kubernetes.io/foo", "kubernetes.io/foo/bar", true},
		{"kubernetes.io/foo", "kubernetes.io/bar", false},
		{"127.0.0.1:5000", "127.0.0.1:5000/team/app", true},
		{"127.0.0.1:5000", "127.0.0.1:5001/team/app", false},
		{"127.0.0.1", "127.0.0.1:5000/team/app", false},
		{"*.kubernetes.io:8080", "prefix.kubernetes.io:8080/foo", true},
	}
	for _, tt := range tests {
		if got := urlsMatch(tt.glob, tt.target); got != tt.want {
			t.Errorf("urlsMatch(%q, %q) = %v, want %v", tt.glob, tt.target, got, tt.want)
		}
	}
}

func TestKeyringLookup(t *testing.T) {
	auth := func(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }
	var k keyring
	err := k.add(DockerConfig{
		"https://reg.example.com/v2/": {Auth: auth("host", "h")},
		"reg.example.com/team":        {Username: "team", Password: "t"},
		"reg.example.com/team/app":    {Auth: base64.RawStdEncoding.EncodeToString([]byte("app:a"))},
		"*.mirror.example.com:5000":   {Username: "mirror", Password: "m"},
		"index.docker.io":             {Username: "hub", Password: "d"},
		"bad.example.com":             {Auth: "!!!"},
	})
	if err == nil {
		t.Error("an entry with a bad auth field gave no error")
	}
	users := func(image string) []string {
		var out []string
		for _, a := range k.lookup(image) {
			out = append(out, a.Username)
		}
		return out
	}
	tests := []struct {
		image string
		want  []string
	}{
		{"reg.example.com/team/app", []string{"app", "team", "host"}},
		{"reg.example.com/team/other", []string{"team", "host"}},
		{"reg.example.com/else", []string{"host"}},
		{"eu.mirror.example.com:5000/x", []string{"mirror"}},
		{"eu.mirror.example.com/x", nil},
		{"docker.io/library/busybox", []string{"hub"}},
		{"busybox", []string{"hub"}},
		{"bad.example.com/x", nil},
		{"other.example.com/x", nil},
	}
	for _, tt := range tests {
		got := users(tt.image)
		if len(got) != len(tt.want) {
			t.Errorf("lookup(%q) = %v, want %v", tt.image, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("lookup(%q) = %v, want %v", tt.image, got, tt.want)
				break
			}
		}
	}
	if a := k.lookup("reg.example.com/team/app")[0]; a.Password != "a" {
		t.Errorf("password from an unpadded auth field = %q, want a", a.Password)
	}
}

func TestParseConfigFormats(t *testing.T) {
	cfg, err := ParseDockerConfigJSON([]byte(`{"auths":{"reg:5000":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("u:p:with:colons")) + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfg["reg:5000"].credential(); err != nil || c.Username != "u" || c.Password != "p:with:colons" {
		t.Errorf("config.json credential = %+v, %v", c, err)
	}
	cfg, err = ParseDockercfg([]byte(`{"reg:5000":{"username":"u","password":"p","email":"e@x"}}`))
	if err != nil || cfg["reg:5000"].Username != "u" {
		t.Errorf(".dockercfg = %+v, %v", cfg, err)
	}
	if _, err := ParseDockerConfigJSON([]byte(`{"auths": [`)); err == nil {
		t.Error("broken config.json parsed")
	}
	if _, err := (DockerConfigEntry{Auth: base64.StdEncoding.EncodeToString([]byte("nocolon"))}).credential(); err == nil {
		t.Error("auth without a colon parsed")
	}
}
