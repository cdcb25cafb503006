// Package logrotation rotates container log files as the kubelet's
// container log manager does: a running container's log that reached the
// size limit is renamed to <log>.<timestamp> and the runtime reopens it
// (CRI ReopenContainerLog); older rotations are gzipped, and the oldest
// removed so that the log and its rotations are at most MaxFiles files.
package logrotation

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// timestampFormat names a rotation, as upstream: sorting the names
	// sorts the rotations by age.
	timestampFormat = "20060102-150405"
	compressSuffix  = ".gz"
	// tmpSuffix marks a compression in progress; one left behind was
	// interrupted.
	tmpSuffix = ".tmp"
)

// Plan is what to do with a log's rotated files before it is rotated
// once more.
type Plan struct {
	// Remove are interrupted compressions, rotations already compressed
	// and the oldest rotations beyond the limit.
	Remove []string
	// Compress are the rotations kept but not compressed yet.
	Compress []string
}

// PlanRotation decides, from the files named <log>.* (rotated), which to
// remove and which to compress so that, once the live log is rotated too,
// the log has at most maxFiles files: the live one, the newest rotation
// uncompressed and the others gzipped (upstream rotateLog).
func PlanRotation(rotated []string, maxFiles int) Plan {
	var p Plan
	inUse, unused := splitUnused(rotated)
	p.Remove = unused
	sort.Strings(inUse)
	// The live log and the rotation about to be made take two places.
	keep := max(maxFiles-2, 0)
	excess := max(len(inUse)-keep, 0)
	p.Remove = append(p.Remove, inUse[:excess]...)
	for _, l := range inUse[excess:] {
		if !strings.HasSuffix(l, compressSuffix) {
			p.Compress = append(p.Compress, l)
		}
	}
	return p
}

// splitUnused separates the rotations that count from leftovers: a
// temporary file of an interrupted compression, or an uncompressed file
// whose compressed copy exists (the compression finished but the original
// was not removed yet).
func splitUnused(logs []string) (inUse, unused []string) {
	have := make(map[string]bool, len(logs))
	for _, l := range logs {
		have[l] = true
	}
	for _, l := range logs {
		if strings.HasSuffix(l, tmpSuffix) || (!strings.HasSuffix(l, compressSuffix) && have[l+compressSuffix]) {
			unused = append(unused, l)
			continue
		}
		inUse = append(inUse, l)
	}
	return inUse, unused
}

// Files are every file of a log: the live one, its rotations and
// leftovers of interrupted compressions (upstream's Clean): what goes when
// the container is removed.
func Files(log string) ([]string, error) {
	rotated, err := rotations(log)
	if err != nil {
		return nil, err
	}
	return append(rotated, log), nil
}

// rotations are the files named <log>.*: rotations and leftovers.
func rotations(log string) ([]string, error) {
	pattern := glob(log) + ".*"
	out, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("listing rotated logs %q: %w", pattern, err)
	}
	return out, nil
}

// glob escapes the pattern characters in a path, which a pod's namespace
// or name cannot hold but a configured logs directory could.
func glob(path string) string {
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ParseMaxSize reads container_log_max_size, a quantity ("10Mi"); a
// negative one turns rotation off, as upstream.
func ParseMaxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return n, nil
}
