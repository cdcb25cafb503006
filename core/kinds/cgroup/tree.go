package cgroup

import (
	"errors"
	"fmt"

	"github.com/microlet/microlet/core/node/machine"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// errBusy means a cgroup still holds processes and cannot be removed yet.
var errBusy = errors.New("the cgroup still holds processes")

// tree creates, updates and removes cgroups in the machine's cgroup
// hierarchies, with containerd's cgroups library and the cgroupfs layout.
// Paths are absolute cgroup paths, the cgroup root included.
type tree interface {
	// apply creates the cgroup (and its parents) if missing and writes the
	// settings that are set; unset settings are left as they are.
	apply(path string, s *cgroupv1.CgroupSettings) error
	// exists reports whether the cgroup exists in every hierarchy used.
	exists(path string) bool
	// remove removes the cgroup and the empty cgroups below it; nil when it
	// is gone already, an error wrapping errBusy when processes remain.
	remove(path string) error
}

// newTree picks the hierarchy pods are managed in: the unified tree in v2
// mode, the v1 controllers otherwise (hybrid included, as runc does).
func newTree(cg *machine.Cgroups) (tree, error) {
	switch cg.Version() {
	case 2:
		return newV2Tree(cg.Unified)
	case 1:
		return newV1Tree(cg.V1)
	}
	return nil, fmt.Errorf("unknown cgroup mode %q", cg.Mode)
}
