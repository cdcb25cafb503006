package pullcreds

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type secrets map[string]*v1.Secret

func (s secrets) GetSecret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	if sec, ok := s[namespace+"/"+name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func users(c Credentials) string {
	var out []string
	for _, a := range c.Auths {
		out = append(out, a.Username+":"+a.Password)
	}
	return strings.Join(out, ",")
}

func TestLookupOrderAndSecrets(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "config.json"), `{"auths":{"reg:5000":{"username":"node","password":"n"}}}`)
	k, err := New(Options{RootDir: root, Secrets: secrets{
		"ns/json":   {Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"reg:5000/team":{"username":"json","password":"j"}}}`)}},
		"ns/cfg":    {Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"reg:5000":{"username":"cfg","password":"c"}}`)}},
		"ns/opaque": {Type: v1.SecretTypeOpaque, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"reg:5000":{"username":"opaque"}}}`)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{
		{Name: "cfg"}, {Name: "missing"}, {Name: ""}, {Name: "json"}, {Name: "opaque"}}}}
	got := k.Lookup(context.Background(), pod, "reg:5000/team/app")
	if want := "json:j,cfg:c,node:n"; users(got) != want {
		t.Errorf("credentials %s, want %s (secrets most specific first, then the node's)", users(got), want)
	}
	if len(got.FailedSecrets) != 1 || got.FailedSecrets[0] != "missing" {
		t.Errorf("failed secrets %v, want [missing]", got.FailedSecrets)
	}
	if got := k.Lookup(context.Background(), pod, "other:5000/app"); len(got.Auths) != 0 {
		t.Errorf("credentials for another registry: %s", users(got))
	}
}

func TestStandaloneNodeCannotReadPullSecrets(t *testing.T) {
	k, err := New(Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got := k.Lookup(context.Background(), &v1.Pod{Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "s"}}}}, "reg/app")
	if len(got.FailedSecrets) != 1 || len(got.Problems) != 1 || !strings.Contains(got.Problems[0].Error(), "no API server") {
		t.Errorf("got %+v, want the secret failed for want of an API server", got)
	}
}

func TestNodeConfigSearchAndReread(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	clk := &clock{t: time.Unix(1000, 0)}
	n := newNodeConfig(root, clk.now)
	n.jsonDirs[3], n.dockercfgDirs[3] = t.TempDir(), t.TempDir() // not the host's /
	lookup := func() string {
		t.Helper()
		auths, err := n.lookup("reg/app")
		if err != nil {
			t.Logf("lookup: %v", err)
		}
		return users(Credentials{Auths: auths})
	}
	writeFile(t, filepath.Join(home, ".dockercfg"), `{"reg":{"username":"legacy","password":"l"}}`)
	if got := lookup(); got != "legacy:l" {
		t.Errorf("with only ~/.dockercfg: %q", got)
	}
	writeFile(t, filepath.Join(home, ".docker", "config.json"), `{"auths":{"reg":{"username":"home","password":"h"}}}`)
	writeFile(t, filepath.Join(root, "config.json"), `{"auths":{"reg":{"username":"root","password":"r"}}}`)
	if got := lookup(); got != "legacy:l" {
		t.Errorf("within 5 minutes of the last read: %q, want the cached legacy:l", got)
	}
	clk.t = clk.t.Add(nodeConfigLifetime)
	if got := lookup(); got != "root:r" {
		t.Errorf("root_dir's config.json: %q, want root:r first", got)
	}
	writeFile(t, filepath.Join(root, "config.json"), `{"auths": [`)
	clk.t = clk.t.Add(nodeConfigLifetime)
	if got := lookup(); got != "home:h" {
		t.Errorf("root_dir's config.json broken: %q, want ~/.docker's home:h", got)
	}
}

// plugin writes a credential provider plugin: a shell script that logs
// its request and answers response.
func plugin(t *testing.T, dir, name, response string) string {
	t.Helper()
	log := filepath.Join(dir, name+".log")
	writeFile(t, filepath.Join(dir, name), fmt.Sprintf("#!/bin/sh\necho \"$@ $PLUGIN_ENV $(cat)\" >> %s\ncat <<'END'\n%s\nEND\n", log, response))
	if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

func TestCredentialProviderPlugins(t *testing.T) {
	bin := t.TempDir()
	imageLog := plugin(t, bin, "per-image", `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"reg:5000":{"username":"img","password":"i"}}}`)
	registryLog := plugin(t, bin, "per-registry", `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"10s","auth":{"reg:5000/team":{"username":"reg","password":"r"}}}`)
	plugin(t, bin, "broken", `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Sometimes"}`)
	config := filepath.Join(t.TempDir(), "providers.yaml")
	writeFile(t, config, `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: per-image
  matchImages: ["reg:5000"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [--flag]
  env: [{name: PLUGIN_ENV, value: set}]
- name: per-registry
  matchImages: ["*:5000/team"]
  defaultCacheDuration: 0s
  apiVersion: credentialprovider.kubelet.k8s.io/v1
- name: broken
  matchImages: ["reg:5000"]
  defaultCacheDuration: 0s
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`)
	clk := &clock{t: time.Unix(1000, 0)}
	reg := prometheus.NewPedanticRegistry()
	k, err := New(Options{RootDir: t.TempDir(), ProviderConfig: config, ProviderBinDir: bin, Clock: clk.now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{}
	lookup := func(image, want string) {
		t.Helper()
		got := k.Lookup(context.Background(), pod, image)
		if users(got) != want {
			t.Errorf("Lookup(%s) = %s, want %s", image, users(got), want)
		}
		if len(got.Problems) != 1 || !strings.Contains(got.Problems[0].Error(), `invalid cacheKeyType "Sometimes"`) {
			t.Errorf("problems %v, want the broken plugin's", got.Problems)
		}
	}
	lookup("reg:5000/team/app", "reg:r,img:i")
	lookup("reg:5000/team/app", "reg:r,img:i")
	lookup("reg:5000/team/other", "reg:r,img:i")
	clk.t = clk.t.Add(time.Minute)
	lookup("reg:5000/team/app", "reg:r,img:i")
	lookup("reg:5000/solo", "img:i")
	runs := func(log string) []string {
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	// per-image: app, other, app again after its minute, solo.
	if got := runs(imageLog); len(got) != 4 || !strings.HasPrefix(got[0], "--flag set {") ||
		!strings.Contains(got[0], `"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1"`) ||
		!strings.Contains(got[0], `"image":"reg:5000/team/app"`) {
		t.Errorf("per-image plugin runs:\n%s", strings.Join(got, "\n"))
	}
	// per-registry: once, then once more after its 10 s; not for solo.
	if got := runs(registryLog); len(got) != 2 {
		t.Errorf("per-registry plugin runs:\n%s", strings.Join(got, "\n"))
	}
	if n := testutil.CollectAndCount(reg, "kubelet_credential_provider_plugin_duration"); n != 3 {
		t.Errorf("kubelet_credential_provider_plugin_duration has %d series, want one per plugin", n)
	}
}

func TestProviderConfigErrors(t *testing.T) {
	bin := t.TempDir()
	plugin(t, bin, "p", "")
	tests := []struct{ config, want string }{
		{"apiVersion: kubelet.config.k8s.io/v2\nkind: CredentialProviderConfig\nproviders: []", "want CredentialProviderConfig of"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []", "at least 1 item"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, matchImages: [reg], apiVersion: credentialprovider.kubelet.k8s.io/v1}]", "defaultCacheDuration is required"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, matchImages: [], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]", "matchImages is required"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, matchImages: [\"https://reg\"], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]", "must not have a scheme"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: q, matchImages: [reg], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]", "no plugin executable"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: ../p, matchImages: [reg], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]", "must be a file name"},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, matchImages: [reg], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v9}]", `apiVersion "credentialprovider.kubelet.k8s.io/v9"`},
		{"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, matchImages: [reg], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1, typo: 1}]", "unknown field"},
	}
	for _, tt := range tests {
		config := filepath.Join(t.TempDir(), "c.yaml")
		writeFile(t, config, tt.config)
		_, err := New(Options{ProviderConfig: config, ProviderBinDir: bin})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config\n%s\ngave %v, want %q", tt.config, err, tt.want)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
