package cgroup

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/util/dump"

	"github.com/microlet/microlet/internal/atomicfile"
)

// The CPU and memory managers' state files are upstream's checkpoints
// (pkg/kubelet/checkpointmanager): the JSON of the value, with a checksum
// so that either agent reads the other's file.

// Checksum is upstream's checkpointmanager/checksum.Checksum.
type Checksum uint64

// kubeletChecksum is upstream's checksum.New of cp, a pointer to a
// checkpoint whose Checksum is 0: an FNV-32a hash of its dump, with the
// type names spelled as upstream's packages spell them (stateTypes are
// this package's names of upstream's state package's types).
func kubeletChecksum(cp any, stateTypes ...string) Checksum {
	text := dump.ForHash(cp)
	for _, name := range stateTypes {
		text = strings.ReplaceAll(text, "cgroup."+name, "state."+name)
	}
	text = strings.ReplaceAll(text, "cgroup.Checksum", "checksum.Checksum")
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", text)
	return Checksum(h.Sum32())
}

// writeCheckpoint writes a state file atomically, as upstream's checkpoint
// manager does.
func writeCheckpoint(path string, cp any) error {
	raw, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
