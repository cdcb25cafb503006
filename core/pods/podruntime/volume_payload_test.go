package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeSources serves fixed objects; a missing one is NotFound.
type fakeSources struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	token      string
}

func (f *fakeSources) GetConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.configMaps[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
}

func (f *fakeSources) GetSecret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

func (f *fakeSources) RequestToken(_ context.Context, pod *v1.Pod, audience string, exp *int64) (string, error) {
	if f.token == "" {
		return "", errors.New("no token")
	}
	return f.token + "/" + pod.Spec.ServiceAccountName + "/" + audience, nil
}

func TestVolumePayload(t *testing.T) {
	sources := &fakeSources{
		configMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"a": "A", "b": "B"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
			"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}},
		secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}}},
		token:   "tok",
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"b": "2", "a": "1"}},
		Spec: v1.PodSpec{ServiceAccountName: "default", Containers: []v1.Container{{Name: "app",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}
	file := func(data string, mode os.FileMode) fileProjection {
		return fileProjection{Data: []byte(data), Mode: mode}
	}
	tests := []struct {
		name string
		vol  v1.VolumeSource
		// standalone: no API server
		standalone bool
		want       map[string]fileProjection
		wantErr    string
	}{
		{name: "configMap, every key with the default mode",
			vol:  v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			want: map[string]fileProjection{"a": file("A", 0o644), "b": file("B", 0o644), "bin": file("\x00\x01", 0o644)}},
		{name: "configMap items with defaultMode and mode",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr[int32](0o400),
				Items: []v1.KeyToPath{{Key: "a", Path: "dir/a.txt"}, {Key: "b", Path: "b", Mode: ptr[int32](0o600)}}}},
			want: map[string]fileProjection{"dir/a.txt": file("A", 0o400), "b": file("B", 0o600)}},
		{name: "configMap item with a missing key",
			vol:     v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "nope", Path: "x"}}}},
			wantErr: "configmap references non-existent config key: nope"},
		{name: "optional configMap item with a missing key",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: ptr(true),
				Items: []v1.KeyToPath{{Key: "nope", Path: "x"}, {Key: "a", Path: "a"}}}},
			want: map[string]fileProjection{"a": file("A", 0o644)}},
		{name: "missing configMap",
			vol:     v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "none"}}},
			wantErr: `configmaps "none" not found`},
		{name: "missing optional secret",
			vol:  v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "none", Optional: ptr(true)}},
			want: map[string]fileProjection{}},
		{name: "secret item with a missing key",
			vol:     v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", Items: []v1.KeyToPath{{Key: "nope", Path: "x"}}}},
			wantErr: "references non-existent secret key: nope"},
		{name: "secret with defaultMode",
			vol:  v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: ptr[int32](0o440)}},
			want: map[string]fileProjection{"user": file("u", 0o440), "pass": file("p", 0o440)}},
		{name: "downwardAPI fields and a resource",
			vol: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}, Mode: ptr[int32](0o600)},
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			}}},
			standalone: true, // needs no API server
			want: map[string]fileProjection{"name": file("p", 0o644), "uid": file("uid-1", 0o600),
				"labels": file("a=\"1\"\nb=\"2\"", 0o644), "mem": file("64", 0o644)}},
		{name: "the service account volume",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o644), Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr[int64](3607)}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}},
			want: map[string]fileProjection{"token": file("tok/default/", 0o644), "ca.crt": file("CA", 0o644), "namespace": file("ns", 0o644)}},
		{name: "projected secret with an audience token",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o400), Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "vault/token", Audience: "vault"}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Items: []v1.KeyToPath{{Key: "user", Path: "user", Mode: ptr[int32](0o444)}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "none"}, Optional: ptr(true)}},
			}}},
			want: map[string]fileProjection{"vault/token": file("tok/default/vault", 0o400), "user": file("u", 0o444)}},
		{name: "standalone node and a secret",
			vol:        v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}},
			standalone: true, wantErr: "standalone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &payloadBuilder{sources: sources}
			if tt.standalone {
				b.sources = nil
			}
			got, err := b.volumePayload(context.Background(), pod, &v1.Volume{Name: "v", VolumeSource: tt.vol})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("volumePayload = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("files %v, want %v", keys(got), keys(tt.want))
			}
			for p, w := range tt.want {
				if g, ok := got[p]; !ok || string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %q %v, want %q %v", p, g.Data, g.Mode, w.Data, w.Mode)
				}
			}
		})
	}
}

// TestVolumePayloadOwnership: upstream's fsGroup and token owner rules.
func TestVolumePayloadOwnership(t *testing.T) {
	sources := &fakeSources{secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"k": []byte("v")}}}, token: "tok"}
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o400), Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
	}}}}
	id := func(v int64) *int64 { return &v }
	tests := []struct {
		name                  string
		pod                   v1.PodSecurityContext
		containerUsers        []*int64
		wantToken, wantK      os.FileMode
		wantTokenUID, wantGID *int64
	}{
		{name: "no fsGroup, users differ", containerUsers: []*int64{id(1000), id(1001)}, wantToken: 0o400, wantK: 0o400},
		{name: "one shared user", pod: v1.PodSecurityContext{RunAsUser: id(1000)}, containerUsers: []*int64{nil, nil},
			wantToken: 0o600, wantK: 0o400, wantTokenUID: id(1000)},
		{name: "fsGroup", pod: v1.PodSecurityContext{FSGroup: id(2000)}, containerUsers: []*int64{id(1000), nil},
			wantToken: 0o640, wantK: 0o440, wantGID: id(2000)},
		{name: "fsGroup and one user", pod: v1.PodSecurityContext{FSGroup: id(2000)}, containerUsers: []*int64{id(1000), id(1000)},
			wantToken: 0o640, wantK: 0o440, wantTokenUID: id(1000), wantGID: id(2000)},
	}
	same := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{ServiceAccountName: "default", SecurityContext: &tt.pod}}
			for i, u := range tt.containerUsers {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprint(i), SecurityContext: &v1.SecurityContext{RunAsUser: u}})
			}
			b := &payloadBuilder{sources: sources, owners: podFileOwnership(pod)}
			got, err := b.volumePayload(context.Background(), pod, vol)
			if err != nil {
				t.Fatal(err)
			}
			tok, k := got["token"], got["k"]
			if tok.Mode != tt.wantToken || k.Mode != tt.wantK || !same(tok.UID, tt.wantTokenUID) || k.UID != nil ||
				!same(tok.GID, tt.wantGID) || !same(k.GID, tt.wantGID) {
				t.Errorf("token %v uid %v gid %v, k %v gid %v; want token %v uid %v, k %v, gid %v",
					tok.Mode, tok.UID, tok.GID, k.Mode, k.GID, tt.wantToken, tt.wantTokenUID, tt.wantK, tt.wantGID)
			}
		})
	}
}
