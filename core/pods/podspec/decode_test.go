package podspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDecodeProblems(t *testing.T) {
	tests := []struct {
		name      string
		manifest  string
		allowList bool
		// want is the error text; every problem names its line.
		want string
	}{
		{
			name:     "yaml syntax",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n spec: {}\n",
			want:     "line 5: invalid YAML: did not find expected key",
		},
		{
			name:     "tab indentation",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: a\n",
			want:     "line 4: invalid YAML: found character that cannot start any token",
		},
		{
			name:     "yaml syntax on the first line",
			manifest: "apiVersion: v1: x\n",
			want:     "line 1: invalid YAML: mapping values are not allowed in this context",
		},
		{
			name:     "unclosed flow mapping",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: a\nspec:\n  containers: []\n",
			want:     "line 3: invalid YAML: did not find expected ',' or '}'",
		},
		{
			name:     "json syntax",
			manifest: "{\"apiVersion\": \"v1\",\n \"kind\": \"Pod\",\n \"spec\": {\"containers\": [}}\n",
			want:     "line 3: invalid YAML: did not find expected node content",
		},
		{
			name:     "wrong type in a list item",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: a\n    ports:\n    - containerPort: 80\n  - name: b\n    ports:\n    - containerPort: http\n",
			want:     `line 12: spec.containers[1].ports[0].containerPort: Invalid value: "http": expected int32`,
		},
		{
			name:     "wrong type for a list",
			manifest: "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n \"spec\": {\"containers\": 5}}",
			want:     "line 2: spec.containers: Invalid value: 5: expected []v1.Container",
		},
		{
			name:     "wrong type in a map",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels:\n    app: web\n    tier: 3\n",
			want:     "line 7: metadata.labels[tier]: Invalid value: 3: expected string",
		},
		{
			name:     "bad quantity",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n        memory: 1Gi\n        cpu: lots\n",
			want:     `line 11: spec.containers[0].resources.limits.cpu: Invalid value: "lots": quantities must match the regular expression`,
		},
		{
			name:     "missing apiVersion and kind",
			manifest: "metadata:\n  name: a\n",
			want:     `line 1: apiVersion: Required value: must be "v1"; line 1: kind: Required value: must be Pod`,
		},
		{
			name:     "other kind",
			manifest: "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n",
			want:     `line 2: kind: Unsupported value: "Service": supported values: "Pod"`,
		},
		{
			name:     "pod list where one pod is expected",
			manifest: "apiVersion: v1\nkind: PodList\nitems: []\n",
			want:     `line 2: kind: Unsupported value: "PodList": supported values: "Pod"`,
		},
		{
			name:      "other kind where a list is allowed",
			manifest:  "apiVersion: v1\nkind: ConfigMap\n",
			allowList: true,
			want:      `line 2: kind: Unsupported value: "ConfigMap": supported values: "Pod", "PodList"`,
		},
		{
			name:     "other apiVersion",
			manifest: "apiVersion: apps/v1\nkind: Pod\n",
			want:     `line 1: apiVersion: Unsupported value: "apps/v1": supported values: "v1"`,
		},
		{
			name:     "not an object",
			manifest: "- a\n- b\n",
			want:     "line 1: expected an object of kind Pod",
		},
		{
			name:     "two documents",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n",
			want:     "line 6: a second YAML document; a manifest holds exactly one object",
		},
		{
			name:     "empty",
			manifest: "# nothing here\n",
			want:     "the manifest is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decode := DecodePod
			if tt.allowList {
				decode = DecodePodOrList
			}
			_, err := decode([]byte(tt.manifest))
			if err == nil {
				t.Fatal("decoded; want an error")
			}
			var merr *ManifestError
			if !errors.As(err, &merr) {
				t.Fatalf("error %v is a %T; want a *ManifestError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n %s\nwant it to start with\n %s", err, tt.want)
			}
		})
	}
}

func TestDecodeWarnings(t *testing.T) {
	manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\nspec:\n  containers:\n  - name: c\n    image: busybox\n    imagePullPolice: Always\n"
	m, err := DecodePod([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range m.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		`line 5: key "name" already set in map, the last value is used`,
		"line 10: spec.containers[0].imagePullPolice: unknown field, ignored",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m.Pods[0].Name != "b" {
		t.Errorf("name %q; want the last value, b", m.Pods[0].Name)
	}
}

func TestDecodePodOrList(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{"pod yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n", []string{"a"}},
		{"pod json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, []string{"a"}},
		{"list", "apiVersion: v1\nkind: PodList\nitems:\n- metadata:\n    name: a\n- metadata:\n    name: b\n", []string{"a", "b"}},
		{"empty list", "apiVersion: v1\nkind: PodList\nitems: []\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodePodOrList([]byte(tt.manifest))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range m.Pods {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("pods %v; want %v", got, tt.want)
			}
		})
	}
}

func TestManifestSizeLimit(t *testing.T) {
	big := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    x: \"" + strings.Repeat("x", MaxManifestBytes) + "\"\n"
	if _, err := DecodePod([]byte(big)); !errors.Is(err, ErrManifestTooLarge) {
		t.Errorf("decoding %d bytes: %v; want ErrManifestTooLarge", len(big), err)
	}
	if _, err := ReadManifest(strings.NewReader(big)); !errors.Is(err, ErrManifestTooLarge) {
		t.Errorf("reading %d bytes: %v; want ErrManifestTooLarge", len(big), err)
	}
	data, err := ReadManifest(strings.NewReader(big[:MaxManifestBytes]))
	if err != nil || len(data) != MaxManifestBytes {
		t.Errorf("reading exactly the limit: %d bytes, %v; want all of it", len(data), err)
	}
}

func TestDecodeHostileAliases(t *testing.T) {
	bomb := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels: &a0 {x: y}\n"
	for i := 1; i <= 30; i++ {
		bomb += fmt.Sprintf("x%d: &a%d [*a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1)
	}
	tests := []struct{ name, manifest, want string }{
		{"self reference", "apiVersion: v1\nkind: Pod\nmetadata: &m\n  name: a\n  self: *m\n", "anchor 'm' value contains itself"},
		{"alias expansion", bomb, "document contains excessive aliasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodePod([]byte(tt.manifest))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want %q", err, tt.want)
			}
		})
	}
}
