//go:build e2e

package pressuree2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/microlet/microlet/core/node/machine"
)

// The foreign-cache scenario (issue 18; docs/eviction.md, "Memory
// notifications"): page cache no listed pod owns sits in /kubepods, and a
// hog (FillScript) grows by HogStepMi at each step. ForeignCache is more
// than one step, less than two, so that usage passes a /kubepods level
// placed without that cache one step before the pods' working sets cross
// the threshold.
const (
	HogStepMi    = 20
	ForeignCache = 30 * Mi
)

// CgroupMemory reads the memory of the node's pods cgroup (/kubepods below
// its cgroup root) as the kernel and the eviction signals see it, and
// charges page cache to it that no pod owns.
type CgroupMemory struct {
	t                        testing.TB
	usage, stat, inactiveKey string
	// dir is the cgroup's directory in the memory hierarchy; cacheFile the
	// file whose page cache ChargeForeignCache last left in it.
	dir, cacheFile string
}

// KubepodsMemory is the node's pods cgroup, in the hierarchy pods are
// managed in (the v1 memory controller on a v1 or hybrid host).
func (n *Node) KubepodsMemory() *CgroupMemory {
	n.t.Helper()
	cg, err := machine.DetectCgroups()
	if err != nil {
		n.t.Fatal(err)
	}
	if cg.Version() == 2 {
		dir := filepath.Join(cg.Unified, n.CgroupRoot, "kubepods")
		return &CgroupMemory{t: n.t, usage: filepath.Join(dir, "memory.current"), stat: filepath.Join(dir, "memory.stat"), inactiveKey: "inactive_file", dir: dir}
	}
	dir := filepath.Join(cg.V1["memory"], n.CgroupRoot, "kubepods")
	return &CgroupMemory{t: n.t, usage: filepath.Join(dir, "memory.usage_in_bytes"), stat: filepath.Join(dir, "memory.stat"), inactiveKey: "total_inactive_file", dir: dir}
}

// Usage is what the kernel counts, and compares with a memcg threshold:
// page cache included. 0 (and an error on the test) if it cannot be read.
func (c *CgroupMemory) Usage() int64 {
	raw, err := os.ReadFile(c.usage)
	if err != nil {
		c.t.Error(err)
		return 0
	}
	usage, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return usage
}

// WorkingSet is usage less inactive file pages, what the eviction signals
// (allocatableMemory.available: upstream's "pods" system container) count.
func (c *CgroupMemory) WorkingSet() int64 {
	usage := c.Usage()
	stat, err := os.ReadFile(c.stat)
	if err != nil {
		c.t.Error(err)
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(stat))
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), " "); ok && k == c.inactiveKey {
			inactive, _ := strconv.ParseInt(v, 10, 64)
			return usage - min(usage, inactive)
		}
	}
	return usage
}

// ChargeForeignCache leaves size bytes of clean page cache charged to the
// cgroup and owned by no pod (issue 18): a shell in a child cgroup writes a
// file and syncs it, then the child is removed, its charges going to the
// cgroup as a deleted pod's do. The kernel counts the cache in the cgroup's
// usage; the working set leaves it out while it is inactive. The previous
// call's file is removed first, freeing its cache; the last one goes with
// the test's temporary directory, the child cgroup at once (or, if its
// removal fails, with the node's cgroup root).
func (c *CgroupMemory) ChargeForeignCache(size int64) {
	c.t.Helper()
	if c.cacheFile != "" {
		if err := os.Remove(c.cacheFile); err != nil {
			c.t.Fatal(err)
		}
	} else {
		c.cacheFile = filepath.Join(c.t.TempDir(), "foreign-cache")
	}
	child := filepath.Join(c.dir, "foreign-cache")
	if err := os.Mkdir(child, 0o755); err != nil {
		c.t.Fatal(err)
	}
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && dd if=/dev/zero of=%s bs=1048576 count=%d conv=fsync 2>/dev/null",
		child, c.cacheFile, size/Mi)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if rmErr := os.Remove(child); err == nil && rmErr != nil {
		err = rmErr
	}
	if err != nil {
		c.t.Fatalf("charging %d bytes of page cache to %s: %v: %s", size, c.dir, err, out)
	}
}
