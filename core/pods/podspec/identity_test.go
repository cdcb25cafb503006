package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const webManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: localhost/nginx:1
`

func prepareWeb(t *testing.T, manifest string, origin Origin) *v1.Pod {
	t.Helper()
	m, err := DecodePod([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	pod, err := m.Prepare(0, origin)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestStaticIdentityIsStable(t *testing.T) {
	file := FileOrigin("Node-1", "/etc/microlet/manifests/web.yaml")
	first := prepareWeb(t, webManifest, file)
	// Pinned: a microlet upgrade must not change the UID of an unchanged
	// manifest, or every static pod restarts after the upgrade.
	if want := types.UID("b6724adac8694d8416ad105bd314ce79"); first.UID != want {
		t.Errorf("UID %s; want the pinned %s", first.UID, want)
	}

	tests := []struct {
		name     string
		manifest string
		origin   Origin
		sameUID  bool
	}{
		{"same manifest, same place", webManifest, file, true},
		{"same content reformatted", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"containers\":[{\"image\":\"localhost/nginx:1\",\"name\":\"nginx\"}]}}", file, true},
		{"explicit defaults", webManifest + "  restartPolicy: Always\n", file, true},
		{"changed content", webManifest + "  restartPolicy: Never\n", file, false},
		{"other file", webManifest, FileOrigin("Node-1", "/etc/microlet/manifests/web2.yaml"), false},
		{"other node", webManifest, FileOrigin("node-2", "/etc/microlet/manifests/web.yaml"), false},
		{"url", webManifest, URLOrigin("Node-1", "http://127.0.0.1/pods"), false},
		{"push", webManifest, PushOrigin("Node-1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := prepareWeb(t, tt.manifest, tt.origin)
			if got := pod.UID == first.UID; got != tt.sameUID {
				t.Errorf("UID %s vs %s: same=%v; want same=%v", pod.UID, first.UID, got, tt.sameUID)
			}
		})
	}
}

func TestURLIdentityIgnoresNode(t *testing.T) {
	a := prepareWeb(t, webManifest, URLOrigin("node-a", "http://127.0.0.1/pods"))
	b := prepareWeb(t, webManifest, URLOrigin("node-b", "http://127.0.0.1/pods"))
	if a.UID != b.UID {
		t.Errorf("URL pods on two nodes got UIDs %s and %s; upstream seeds them with the URL only", a.UID, b.UID)
	}
}

func TestStaticIdentityFields(t *testing.T) {
	tests := []struct {
		name          string
		manifest      string
		origin        Origin
		wantName      string
		wantNamespace string
		wantUID       types.UID
		tolerated     bool
	}{
		{
			name:          "file pod",
			manifest:      webManifest,
			origin:        FileOrigin("Node-1", "/etc/microlet/manifests/web.yaml"),
			wantName:      "web-node-1",
			wantNamespace: "default",
			tolerated:     true,
		},
		{
			name:          "url pod keeps its namespace and gets no toleration",
			manifest:      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: dns\n  namespace: kube-system\nspec:\n  containers:\n  - name: c\n    image: x:1\n",
			origin:        URLOrigin("n1", "http://127.0.0.1/"),
			wantName:      "dns-n1",
			wantNamespace: "kube-system",
		},
		{
			name:          "a given UID is kept",
			manifest:      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  uid: 0b5e7d37-given\nspec:\n  containers:\n  - name: c\n    image: x:1\n",
			origin:        PushOrigin("n1"),
			wantName:      "a-n1",
			wantNamespace: "default",
			wantUID:       "0b5e7d37-given",
			tolerated:     true,
		},
		{
			name: "an existing matching toleration is not duplicated",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  tolerations:\n  - operator: Exists\n    effect: NoExecute\n" +
				"  containers:\n  - name: c\n    image: x:1\n",
			origin:        FileOrigin("n1", "/m/a.yaml"),
			wantName:      "a-n1",
			wantNamespace: "default",
			tolerated:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := prepareWeb(t, tt.manifest, tt.origin)
			if pod.Name != tt.wantName || pod.Namespace != tt.wantNamespace {
				t.Errorf("pod %s/%s; want %s/%s", pod.Namespace, pod.Name, tt.wantNamespace, tt.wantName)
			}
			if tt.wantUID != "" && pod.UID != tt.wantUID {
				t.Errorf("UID %s; want %s", pod.UID, tt.wantUID)
			}
			if len(pod.UID) == 0 || pod.Annotations[ConfigHashAnnotationKey] != string(pod.UID) {
				t.Errorf("UID %q, config hash %q; want the hash to be the UID", pod.UID, pod.Annotations[ConfigHashAnnotationKey])
			}
			if pod.Spec.NodeName != string(tt.origin.nodeName) {
				t.Errorf("spec.nodeName %q; want %q", pod.Spec.NodeName, tt.origin.nodeName)
			}
			if pod.Status.Phase != v1.PodPending {
				t.Errorf("phase %q; want Pending", pod.Status.Phase)
			}
			var tolerations int
			for _, tol := range pod.Spec.Tolerations {
				if tol.Operator == v1.TolerationOpExists && tol.Effect == v1.TaintEffectNoExecute && tol.Key == "" {
					tolerations++
				}
			}
			want := 0
			if tt.tolerated {
				want = 1
			}
			if tolerations != want {
				t.Errorf("%d Exists/NoExecute tolerations; want %d", tolerations, want)
			}
		})
	}
}
