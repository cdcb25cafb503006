package devnode

import (
	"golang.org/x/sys/unix"

	"github.com/hashicorp/go-hclog"
)

// fullDiskShare is the smallest share of a filesystem that the kubelet's
// default disk thresholds want available: imagefs.available<15%, and image
// GC from 85% use.
const fullDiskShare = 0.15

// warnIfDiskFull logs when dir's filesystem, which holds the node's images
// and snapshots, has less than fullDiskShare available: an agent with the
// kubelet's defaults on this node reports DiskPressure and rejects pods,
// whatever its tests do.
func warnIfDiskFull(dir string, log hclog.Logger) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Blocks == 0 {
		return
	}
	if available := float64(st.Bavail) / float64(st.Blocks); available < fullDiskShare {
		log.Warn("the node's disk is more than 85% full: an agent with the kubelet's default disk thresholds will report DiskPressure and reject pods; run the tests on a disk of their own (hack/e2e-disk.sh)",
			"dir", dir, "available_percent", int(available*100))
	}
}
