package hostdev

import (
	"slices"
	"testing"

	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

var info = sdk.Info{Kind: sdk.KindDevices, Name: "hostdev", Version: "0.1.0"}

func fuse() map[string]any {
	return map[string]any{"name": "microlet.dev/fuse", "paths": []string{"/dev/fuse"}}
}

// Every problem of a block is reported with its key, through the SDK's
// decoding as the core sends the block.
func TestValidateConfig(t *testing.T) {
	h := sdktest.InProcess(t, info, newPlugin(devFS()))
	for _, tc := range []struct {
		name  string
		block map[string]any
		want  []sdk.ConfigError
	}{
		{name: "valid", block: map[string]any{"resources": []any{
			fuse(),
			map[string]any{"name": "microlet.dev/tun", "paths": []string{"/dev/net/tun"}, "permissions": "rw"},
			map[string]any{"name": "microlet.dev/dri", "paths": []string{"/dev/dri/renderD*"}},
		}, "scan_interval": "1s"}},
		{name: "no resources", block: map[string]any{},
			want: []sdk.ConfigError{{Path: "resources", Message: `expected at least one resource, such as { name = "microlet.dev/fuse", paths = ["/dev/fuse"] }`}}},
		{name: "bad name", block: map[string]any{"resources": []any{map[string]any{"name": "fuse", "paths": []string{"/dev/fuse"}}}},
			want: []sdk.ConfigError{{Path: "resources[0].name", Message: `invalid extended resource name: "fuse" has no domain: expected <domain>/<name>, such as "vendor.example/gpu"`}}},
		{name: "duplicate name", block: map[string]any{"resources": []any{fuse(), fuse()}},
			want: []sdk.ConfigError{{Path: "resources[1].name", Message: `"microlet.dev/fuse" is already configured in resources[0]`}}},
		{name: "paths", block: map[string]any{"resources": []any{
			map[string]any{"name": "microlet.dev/a"},
			map[string]any{"name": "microlet.dev/b", "paths": []string{"dev/fuse", "/dev/../dev/fuse", "/dev/[fuse"}},
		}}, want: []sdk.ConfigError{
			{Path: "resources[0].paths", Message: `expected at least one device node path or glob, such as "/dev/fuse"`},
			{Path: "resources[1].paths[0]", Message: `expected an absolute, clean path such as "/dev/fuse", got "dev/fuse"`},
			{Path: "resources[1].paths[1]", Message: `expected an absolute, clean path such as "/dev/fuse", got "/dev/../dev/fuse"`},
			{Path: "resources[1].paths[2]", Message: `invalid glob "/dev/[fuse": syntax error in pattern`},
		}},
		{name: "permissions", block: map[string]any{"resources": []any{
			map[string]any{"name": "microlet.dev/a", "paths": []string{"/dev/a"}, "permissions": "rx"},
			map[string]any{"name": "microlet.dev/b", "paths": []string{"/dev/b"}, "permissions": "rr"},
		}}, want: []sdk.ConfigError{
			{Path: "resources[0].permissions", Message: `expected any of "r", "w" and "m", each at most once, such as "rwm"; got "rx"`},
			{Path: "resources[1].permissions", Message: `expected any of "r", "w" and "m", each at most once, such as "rwm"; got "rr"`},
		}},
		{name: "scan interval", block: map[string]any{"resources": []any{fuse()}, "scan_interval": "0s"},
			want: []sdk.ConfigError{{Path: "scan_interval", Message: `expected a positive duration such as "5s", got "0s"`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.ValidateConfig(tc.block)
			if err != nil {
				t.Fatalf("ValidateConfig: %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ValidateConfig errors\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
