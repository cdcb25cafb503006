package podruntime

import (
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Upstream's modes for files the pod's fsGroup owns (pkg/volume
// SetVolumeOwnership on a read-only volume) and for a token that one user
// or group owns (the projected plugin).
const (
	fsGroupReadMask  os.FileMode = 0o440
	fsGroupRWMask    os.FileMode = 0o660
	fsGroupExecMask  os.FileMode = 0o110
	ownedTokenMode   os.FileMode = 0o600
	noOwnershipValue             = -1
)

// fileOwnership is who the files of a pod's projected volumes belong to.
type fileOwnership struct {
	// user is the token's owner: the one runAsUser every container
	// shares (upstream's FsUserFrom), nil if they differ or one has none.
	user *int64
	// group is the pod's fsGroup, nil if unset.
	group *int64
}

func podFileOwnership(pod *v1.Pod) fileOwnership {
	var o fileOwnership
	if psc := pod.Spec.SecurityContext; psc != nil {
		o.group = psc.FSGroup
	}
	o.user = sharedRunAsUser(pod)
	return o
}

// sharedRunAsUser is upstream's FsUserFrom: the effective runAsUser of all
// containers when they have one and it is the same.
func sharedRunAsUser(pod *v1.Pod) *int64 {
	var user *int64
	shared := func(c *v1.Container) bool {
		uid := effectiveSecurityContext(pod, c).RunAsUser
		if uid == nil || (user != nil && *user != *uid) {
			return false
		}
		user = uid
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !shared(&pod.Spec.InitContainers[i]) {
			return nil
		}
	}
	for i := range pod.Spec.Containers {
		if !shared(&pod.Spec.Containers[i]) {
			return nil
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if !shared((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return nil
		}
	}
	return user
}

// tokenMode is a token file's mode: upstream makes it 0600 when a user or
// group will own it, else the volume's defaultMode.
func (o fileOwnership) tokenMode(defaultMode os.FileMode) os.FileMode {
	if o.user != nil || o.group != nil {
		return ownedTokenMode
	}
	return defaultMode
}

// apply gives every file the fsGroup as group, readable by it, as
// upstream's SetVolumeOwnership does after writing; the token keeps the
// owner it was given.
func (o fileOwnership) apply(payload map[string]fileProjection) {
	if o.group == nil {
		return
	}
	for p, f := range payload {
		f.GID = o.group
		f.Mode |= fsGroupReadMask
		payload[p] = f
	}
}

// chownFile gives path the owner and group f asks for, if any.
func chownFile(path string, f fileProjection) error {
	if f.UID == nil && f.GID == nil {
		return nil
	}
	uid, gid := noOwnershipValue, noOwnershipValue
	if f.UID != nil {
		uid = int(*f.UID)
	}
	if f.GID != nil {
		gid = int(*f.GID)
	}
	return os.Lchown(path, uid, gid)
}

// setVolumeOwnership gives every file under dir to group fsGroup with group
// read and write, directories also group search and setgid so that new
// files inherit the group, as upstream's SetVolumeOwnership on a writable
// volume; symbolic links are chowned, not followed. Upstream does it once,
// when it sets an emptyDir up; here it is done whenever the volume's root
// is not so owned (upstream's OnRootMismatch test), which is once, and again
// only after a failure or a hand-made change, and costs a stat per sync.
func setVolumeOwnership(dir string, fsGroup int64) error {
	if !ownershipMismatch(dir, fsGroup) {
		return nil
	}
	return filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(fsGroup)); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		mask := fsGroupRWMask
		if info.IsDir() {
			mask |= os.ModeSetgid | fsGroupExecMask
		}
		return os.Chmod(path, info.Mode()|mask)
	})
}

// ownershipMismatch is upstream's requiresPermissionChange for a writable
// volume: the root's group is not fsGroup, or it lacks setgid or group read,
// write and search. An unreadable root counts as a mismatch.
func ownershipMismatch(dir string, fsGroup int64) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != fsGroup {
		return true
	}
	want := fsGroupRWMask | fsGroupExecMask
	return info.Mode()&os.ModeSetgid == 0 || info.Mode()&want != want
}
