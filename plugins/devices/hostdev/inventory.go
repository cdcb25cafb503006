package hostdev

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// scan finds the device nodes each resource's patterns match in fsys, the
// host's root ("/") or a fake of it. A node goes to the first resource in
// config order that matches it, so that no device is offered twice. Nodes
// that are not devices (a regular file, a directory) are skipped; the
// returned conflicts name nodes that later resources also matched.
func scan(fsys fs.FS, resources []ResourceConfig) (found map[string][]string, conflicts []string, err error) {
	found = map[string][]string{}
	owner := map[string]string{}
	for _, r := range resources {
		for _, pattern := range r.Paths {
			matches, err := fs.Glob(fsys, strings.TrimPrefix(pattern, "/"))
			if err != nil {
				return nil, nil, fmt.Errorf("resource %s: pattern %q: %w", r.Name, pattern, err)
			}
			for _, m := range matches {
				path := "/" + m
				if !isDeviceNode(fsys, m) {
					continue
				}
				if first, taken := owner[path]; taken {
					if first != r.Name {
						conflicts = append(conflicts, fmt.Sprintf("%s matches both %s and %s; it is offered as %s only", path, first, r.Name, first))
					}
					continue
				}
				owner[path] = r.Name
				found[r.Name] = append(found[r.Name], path)
			}
		}
	}
	for _, paths := range found {
		slices.Sort(paths)
	}
	return found, conflicts, nil
}

// isDeviceNode says whether name (relative to fsys) is a character or block
// device, following symlinks as the runtime does when it opens the node.
func isDeviceNode(fsys fs.FS, name string) bool {
	info, err := fs.Stat(fsys, name)
	return err == nil && info.Mode()&fs.ModeDevice != 0
}

// inventory is every device each resource has had since the plugin
// started, by resource and node path, with its health: a node that
// disappears stays listed, unhealthy, as upstream device plugins report
// devices that fail.
type inventory map[string]map[string]bool

// update is the inventory after a scan that found the nodes in found.
func (inv inventory) update(found map[string][]string) inventory {
	next := inventory{}
	for name, devices := range inv {
		next[name] = map[string]bool{}
		for path := range devices {
			next[name][path] = false
		}
	}
	for name, paths := range found {
		if next[name] == nil {
			next[name] = map[string]bool{}
		}
		for _, path := range paths {
			next[name][path] = true
		}
	}
	return next
}

// resources are the inventory on the wire, for every configured resource
// (one without nodes offers no devices), ordered by name and path.
func (inv inventory) resources(configured []ResourceConfig) []*devicesv1.Resource {
	out := make([]*devicesv1.Resource, 0, len(configured))
	for _, r := range configured {
		wire := &devicesv1.Resource{Name: r.Name}
		paths := make([]string, 0, len(inv[r.Name]))
		for path := range inv[r.Name] {
			paths = append(paths, path)
		}
		slices.Sort(paths)
		for _, path := range paths {
			wire.Devices = append(wire.Devices, &devicesv1.Device{Id: path, Healthy: inv[r.Name][path]})
		}
		out = append(out, wire)
	}
	slices.SortFunc(out, func(a, b *devicesv1.Resource) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}
