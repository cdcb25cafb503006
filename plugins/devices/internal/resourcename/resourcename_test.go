package resourcename

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		// wantErr is a part of the expected error; empty: valid.
		wantErr string
	}{
		{name: "microlet.dev/fuse"},
		{name: "example.com/resource"},
		{name: "nvidia.com/gpu"},
		{name: "vendor.example/Device_1.a"},
		{name: "gpu", wantErr: "has no domain"},
		{name: "cpu", wantErr: "has no domain"},
		{name: "kubernetes.io/batteries", wantErr: "reserved for native resources"},
		{name: "example.kubernetes.io/thing", wantErr: "reserved for native resources"},
		{name: "requests.example.com/gpu", wantErr: "reserved for quota names"},
		{name: "example.com/a/b", wantErr: "more than one '/'"},
		{name: "Example.com/gpu", wantErr: "must be a DNS subdomain"},
		{name: "/gpu", wantErr: "must be a DNS subdomain"},
		{name: "example..com/gpu", wantErr: "must be a DNS subdomain"},
		{name: strings.Repeat("a", 245) + "/gpu", wantErr: "at most 244 characters"},
		{name: "example.com/", wantErr: "the name \"\" must be"},
		{name: "example.com/-gpu", wantErr: "starting and ending with a letter or digit"},
		{name: "example.com/" + strings.Repeat("g", 64), wantErr: "at most 63"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.name)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate(%q) = %v, want nil", tc.name, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate(%q) = %v, want an error containing %q", tc.name, err, tc.wantErr)
			}
		})
	}
}
