package devnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// runRoot holds one short directory per node for what has to be short or
// host-wide: containerd's socket (unix socket paths stay under 108 bytes),
// its state, runc's state, and the record that reserves the slot.
const runRoot = "/run/microlet-devnode"

// slot numbers the nodes of a host. Slot N owns the pod subnet
// 10.88.N.0/24, the bridge mldevN, the CNI network microlet-devnode-N and
// the run directory /run/microlet-devnode/N.
type slot int

const (
	firstSlot slot = 1
	lastSlot  slot = 254
)

func (s slot) subnet() *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, 88, byte(s), 0).To4(), Mask: net.CIDRMask(24, 32)}
}
func (s slot) bridge() string  { return fmt.Sprintf("mldev%d", int(s)) }
func (s slot) network() string { return fmt.Sprintf("microlet-devnode-%d", int(s)) }
func (s slot) runDir() string  { return filepath.Join(runRoot, strconv.Itoa(int(s))) }

// record is what a slot's run directory says about its node, so that a
// later Start can clean up after a process that died without calling Close.
type record struct {
	Dir           string `json:"dir"`
	OwnerPID      int    `json:"ownerPID"`
	OwnerStart    uint64 `json:"ownerStart"` // with the PID, tells a live owner from a reused PID
	ContainerdPID int    `json:"containerdPID,omitempty"`
}

const recordFile = "node.json"

func writeRecord(runDir string, r record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(runDir, recordFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(runDir, recordFile))
}

func readRecord(runDir string) (record, error) {
	var r record
	data, err := os.ReadFile(filepath.Join(runDir, recordFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(runDir, recordFile), err)
	}
	return r, nil
}

// lockPath is the host-wide lock on slots.
var lockPath = filepath.Join(runRoot, ".lock")

// lockRunRoot takes the host-wide lock on slots: an flock on lockPath. The
// last node to leave removes the file while it holds the lock (releaseSlot),
// so a process that locked the removed file tries again on a new one:
// holding the lock means holding the file lockPath names.
func lockRunRoot() (unlock func(), err error) {
	for {
		lock, err := openInRunRoot(filepath.Base(lockPath))
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			lock.Close()
			return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
		}
		locked, err := lock.Stat()
		if err != nil {
			lock.Close()
			return nil, err
		}
		if named, err := os.Stat(lockPath); err == nil && os.SameFile(locked, named) {
			// Closing the file releases the lock.
			return func() { lock.Close() }, nil
		}
		lock.Close()
	}
}

// openInRunRoot opens (creating) a lock file in runRoot, which the last
// node to close removes when it is empty (releaseSlot): a removal between
// creating runRoot and opening the file is retried.
func openInRunRoot(name string) (*os.File, error) {
	for {
		if err := os.MkdirAll(runRoot, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(runRoot, name), os.O_CREATE|os.O_RDWR, 0o644)
		if !errors.Is(err, os.ErrNotExist) {
			return f, err
		}
	}
}

// claimSlot reserves a free slot for a node living in dir: one with no
// run directory whose subnet no link address or route of the host touches.
// Slots whose owner died are cleaned up and reused. A lock on runRoot
// serialises claims across processes.
func claimSlot(ctx context.Context, dir string, log hclog.Logger) (slot, error) {
	unlock, err := lockRunRoot()
	if err != nil {
		return 0, err
	}
	defer unlock()

	reapAbandoned(ctx, log)
	used, err := hostNetworks()
	if err != nil {
		return 0, fmt.Errorf("list the host's networks: %w", err)
	}
	owner, err := processStart(os.Getpid())
	if err != nil {
		return 0, err
	}
next:
	for s := firstSlot; s <= lastSlot; s++ {
		if _, err := os.Lstat(s.runDir()); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		for _, n := range used {
			if overlaps(n, s.subnet()) {
				continue next
			}
		}
		if err := os.Mkdir(s.runDir(), 0o755); err != nil {
			return 0, err
		}
		if err := writeRecord(s.runDir(), record{Dir: dir, OwnerPID: os.Getpid(), OwnerStart: owner}); err != nil {
			os.RemoveAll(s.runDir())
			return 0, err
		}
		return s, nil
	}
	return 0, fmt.Errorf("no free pod subnet: every 10.88.N.0/24 (N %d..%d) is claimed in %s or overlaps a route or address of this host",
		firstSlot, lastSlot, runRoot)
}

// sharedDirs are host-wide directories containerd and libcni create on
// first use and never remove: the shim sockets' directory, libcni's result
// cache. Under every cgroup hierarchy, containerd also puts containers whose
// sandbox names no cgroup parent in /k8s.io/<id>.
var sharedDirs = []string{shimSocketDir, filepath.Dir(shimSocketDir), "/var/lib/cni/results", "/var/lib/cni"}

const defaultCgroupParent = "k8s.io"

// releaseSlot removes the slot's run directory. When no other node is left
// on the host, it also removes the shared directories that are empty and
// portmap's chains if idle: with the lock held, no other node can be using
// them. The last node also removes the lock file and runRoot, leaving
// nothing in /run (after a Ctrl-C of make run, say).
func releaseSlot(s slot) error {
	unlock, err := lockRunRoot()
	if err != nil {
		return err
	}
	defer unlock()
	if last, err := releaseSlotLocked(s); err != nil || !last {
		return err
	}
	if err := os.Remove(lockPath); err != nil {
		return err
	}
	unix.Rmdir(runRoot) // stays while another lock file (kubelet.lock) is in it
	return nil
}

// anySlotLeft says whether runRoot holds a slot's run directory.
func anySlotLeft() (bool, error) {
	entries, err := os.ReadDir(runRoot)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && slot(n) >= firstSlot && slot(n) <= lastSlot {
			return true, nil
		}
	}
	return false, nil
}

// releaseSlotLocked is releaseSlot but for the lock file and runRoot, for
// a caller holding the lock; last says no other node is left.
func releaseSlotLocked(s slot) (last bool, err error) {
	if err := os.RemoveAll(s.runDir()); err != nil {
		return false, err
	}
	if left, err := anySlotLeft(); err != nil || left {
		return false, err
	}
	dirs := sharedDirs
	if points, err := cgroupMounts(); err == nil {
		for _, mp := range points {
			dirs = append(dirs, filepath.Join(mp, defaultCgroupParent))
		}
	}
	for _, d := range dirs {
		// rmdir removes only what is empty: a system containerd's or
		// another CNI user's files stay, and so does the directory.
		unix.Rmdir(d)
	}
	return true, removeIdlePortmapChains()
}

// reapAbandoned closes the nodes whose owning process is gone: a test
// binary killed by its timeout leaves containerd, its shims, mounts and
// bridge behind, and the next Start tidies up.
func reapAbandoned(ctx context.Context, log hclog.Logger) {
	entries, err := os.ReadDir(runRoot)
	if err != nil {
		log.Warn("cannot list node slots", "dir", runRoot, "error", err)
		return
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || slot(n) < firstSlot || slot(n) > lastSlot {
			continue
		}
		s := slot(n)
		rec, err := readRecord(s.runDir())
		if err != nil {
			log.Warn("node slot without a readable record; leaving it alone", "dir", s.runDir(), "error", err)
			continue
		}
		if start, err := processStart(rec.OwnerPID); err == nil && start == rec.OwnerStart {
			continue
		}
		log.Warn("cleaning up a node whose process exited without closing it", "slot", int(s), "dir", rec.Dir, "owner_pid", rec.OwnerPID)
		node := newNode(s, rec.Dir, log)
		node.adoptContainerd(rec.ContainerdPID)
		clean, err := node.teardown(ctx)
		if clean {
			_, rerr := releaseSlotLocked(s)
			err = errors.Join(err, rerr)
		}
		if err != nil {
			log.Error("cleaning up an abandoned node failed", "slot", int(s), "error", err)
		}
	}
}
