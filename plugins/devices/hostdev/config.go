package hostdev

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/microlet/microlet/plugins/devices/internal/resourcename"
	"github.com/microlet/microlet/sdk"
)

// Defaults of the config block.
const (
	// DefaultPermissions let a container read, write and mknod the node,
	// as runc grants a device it is given without permissions.
	DefaultPermissions  = "rwm"
	DefaultScanInterval = 5 * time.Second
)

// Config is the plugin's config block:
//
//	resources = [
//	  { name = "microlet.dev/fuse", paths = ["/dev/fuse"], permissions = "rwm" },
//	  { name = "microlet.dev/tun",  paths = ["/dev/net/tun"] },
//	]
//	scan_interval = "5s"
type Config struct {
	Resources []ResourceConfig `json:"resources"`
	// ScanInterval is how often the nodes are looked for again: a node
	// that disappeared makes its device unhealthy, a new one adds a device.
	ScanInterval sdk.Duration `json:"scan_interval"`
}

// ResourceConfig is one extended resource and the device nodes that make it.
type ResourceConfig struct {
	// Name is the extended resource, "<domain>/<name>".
	Name string `json:"name"`
	// Paths are absolute glob patterns (filepath.Match) of device nodes;
	// each node one matches is one device.
	Paths []string `json:"paths"`
	// Permissions are the container's cgroup permissions on the nodes, any
	// of "r", "w", "m"; empty: DefaultPermissions.
	Permissions string `json:"permissions"`
}

// SetDefaults sets what a block may leave out.
func (c *Config) SetDefaults() {
	c.ScanInterval = sdk.Duration{Duration: DefaultScanInterval}
}

// Validate reports every problem of the block, each with its key.
func (c *Config) Validate() error {
	var errs sdk.ConfigErrors
	add := func(path, format string, args ...any) {
		errs = append(errs, sdk.ConfigError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if len(c.Resources) == 0 {
		add("resources", `expected at least one resource, such as { name = "microlet.dev/fuse", paths = ["/dev/fuse"] }`)
	}
	seen := map[string]int{}
	for i, r := range c.Resources {
		key := fmt.Sprintf("resources[%d]", i)
		if err := resourcename.Validate(r.Name); err != nil {
			add(key+".name", "invalid extended resource name: %v", err)
		} else if first, dup := seen[r.Name]; dup {
			add(key+".name", "%q is already configured in resources[%d]", r.Name, first)
		} else {
			seen[r.Name] = i
		}
		if len(r.Paths) == 0 {
			add(key+".paths", `expected at least one device node path or glob, such as "/dev/fuse"`)
		}
		for j, p := range r.Paths {
			if err := validatePattern(p); err != nil {
				add(fmt.Sprintf("%s.paths[%d]", key, j), "%v", err)
			}
		}
		if err := validatePermissions(r.Permissions); err != nil {
			add(key+".permissions", "%v", err)
		}
	}
	if c.ScanInterval.Duration <= 0 {
		add("scan_interval", "expected a positive duration such as \"5s\", got %q", c.ScanInterval.String())
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func validatePattern(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("expected an absolute, clean path such as \"/dev/fuse\", got %q", p)
	}
	if _, err := filepath.Match(p, ""); err != nil {
		return fmt.Errorf("invalid glob %q: %v", p, err)
	}
	return nil
}

func validatePermissions(perms string) error {
	for i, c := range perms {
		if !strings.ContainsRune("rwm", c) || strings.ContainsRune(perms[:i], c) {
			return fmt.Errorf("expected any of \"r\", \"w\" and \"m\", each at most once, such as %q; got %q", DefaultPermissions, perms)
		}
	}
	return nil
}

// permissions are r's permissions with the default applied.
func (r ResourceConfig) permissions() string {
	if r.Permissions == "" {
		return DefaultPermissions
	}
	return r.Permissions
}
