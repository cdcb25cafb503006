//go:build e2e

package clustere2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/testregistry"
)

const (
	registryUser     = "puller"
	registryPassword = "right-password"
)

// TestImagePullCredentials pulls from a real registry on loopback (TLS,
// htpasswd) with every source of credentials the kubelet has: a pod's
// kubernetes.io/dockerconfigjson pull secret, its service account's pull
// secrets (copied into the pod by the API server's ServiceAccount
// admission), the node's config.json in root_dir, and a credential
// provider exec plugin. Without credentials, and with a
// kubernetes.io/dockercfg secret of a wrong password, the container waits
// in ErrImagePull / ImagePullBackOff with the registry's answer, and the
// pod has the kubelet's Failed and BackOff events (and, for a pull secret
// that does not exist, FailedToRetrieveImagePullSecret). Each pod pulls its own
// tag of one small image (the pause program), so that no pull finds
// another's image present.
func TestImagePullCredentials(t *testing.T) {
	t.Parallel()
	reg := testregistry.StartT(t, map[string]string{registryUser: registryPassword})
	cases := []string{"secret", "account", "nodeconfig", "plugin", "none", "wrong"}
	img := devnode.PauseImage("localhost/registry-pause:1")
	image := func(name string) string { return reg.Host + "/e2e/" + name + ":1" }
	for _, name := range cases {
		reg.PushT(t, img, "e2e/"+name+":1", registryUser, registryPassword)
	}

	// The plugin answers for e2e/plugin only, with the credentials the
	// config's env gives it, and logs each request it gets.
	binDir, confDir := t.TempDir(), t.TempDir()
	testregistry.BuildCredentialProvider(t, binDir, "test-credential-provider")
	requests := filepath.Join(confDir, "requests.log")
	providerConfig := filepath.Join(confDir, "credential-providers.yaml")
	writeFile(t, providerConfig, fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: test-credential-provider
  matchImages: [%q]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--log", %q]
  env:
  - {name: CREDPROVIDER_USER, value: %q}
  - {name: CREDPROVIDER_PASSWORD, value: %q}
`, reg.Host+"/e2e/plugin", requests, registryUser, registryPassword))

	n := startNode(t, nodeOptions{
		RegistryCAs: map[string]string{reg.Host: reg.CAFile},
		Settings: map[string]string{
			"image_credential_provider_config":  quote(providerConfig),
			"image_credential_provider_bin_dir": quote(binDir),
		},
	})
	// The node's config.json, for e2e/nodeconfig only; read at the first
	// pull.
	writeFile(t, filepath.Join(n.RootDir, "config.json"), dockerConfigJSON(reg.Host+"/e2e/nodeconfig", registryUser, registryPassword))
	waitReady(t, n, "")

	ns := testNamespace(t)
	ctx := context.Background()
	admin := cluster(t).Admin
	for _, s := range []*v1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "good"}, Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(dockerConfigJSON(reg.Host, registryUser, registryPassword))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "wrong"}, Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(fmt.Sprintf(`{%q: {"username": %q, "password": "wrong-password"}}`, reg.Host, registryUser))}},
	} {
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller"}, ImagePullSecrets: []v1.LocalObjectReference{{Name: "good"}}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range cases {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: image(name)})
		switch name {
		case "secret":
			spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "good"}}
		case "wrong":
			spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "wrong"}}
		case "none":
			spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "missing"}}
		case "account":
			spec.ServiceAccountName = "puller"
		}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, name := range []string{"secret", "account", "nodeconfig", "plugin"} {
		waitAPIPod(t, n, ns, name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	data, err := os.ReadFile(requests)
	if err != nil || !strings.Contains(string(data), fmt.Sprintf(`"image":%q`, reg.Host+"/e2e/plugin")) {
		t.Errorf("the plugin's requests: %q, %v; want one for %s/e2e/plugin", data, err, reg.Host)
	}

	// The registry's answer to a pull without valid credentials.
	const unauthorized = "401 Unauthorized"
	for _, name := range []string{"none", "wrong"} {
		p := waitAPIPod(t, n, ns, name, "waiting in ErrImagePull or ImagePullBackOff with the registry's "+unauthorized, func(p *v1.Pod) bool {
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") &&
					strings.Contains(w.Message, unauthorized) {
					return true
				}
			}
			return false
		})
		if p.Status.Phase != v1.PodPending {
			t.Errorf("pod %s: phase %s, want Pending", name, p.Status.Phase)
		}
		events := podEvents(t, p)
		waitForReasons(t, n, "the events of pod "+name, events, "Pulling", "Failed", "BackOff")
		// The runtime's error as it is, as the kubelet shows it.
		prefix := fmt.Sprintf("Failed to pull image %q: rpc error: code = Unknown desc = failed to pull and unpack image %q", image(name), image(name))
		found := false
		for _, e := range events() {
			if e.Reason == "Failed" && strings.HasPrefix(e.Message, prefix) && strings.Contains(e.Message, unauthorized) && e.Type == v1.EventTypeWarning {
				found = true
			}
			if e.Reason == "BackOff" && e.Message != fmt.Sprintf("Back-off pulling image %q", image(name)) {
				t.Errorf("pod %s: BackOff event %q", name, e.Message)
			}
		}
		if !found {
			t.Errorf("pod %s: no Failed warning %q... with %q in %v", name, prefix, unauthorized, eventMessages(events()))
		}
	}
	none := waitAPIPod(t, n, ns, "none", "exists", func(*v1.Pod) bool { return true })
	waitForReasons(t, n, "the missing pull secret's event", podEvents(t, none), "FailedToRetrieveImagePullSecret")
	for _, e := range podEvents(t, none)() {
		if e.Reason == "FailedToRetrieveImagePullSecret" && (e.Type != v1.EventTypeWarning ||
			e.Message != "Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed.") {
			t.Errorf("FailedToRetrieveImagePullSecret: %s %q", e.Type, e.Message)
		}
	}
}

// dockerConfigJSON is a config.json with one credential for location.
func dockerConfigJSON(location, user, password string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, location, auth)
}

func eventMessages(events []v1.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}
