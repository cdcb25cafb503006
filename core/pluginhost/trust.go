package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// verifiedBinary is a plugin binary opened once, then checked and hashed
// through that one descriptor. The host execs the same descriptor
// (/proc/self/fd/N), so what was checked is what runs: replacing the file
// after the check changes nothing.
type verifiedBinary struct {
	file *os.File
	// path is where the operator put it, for messages.
	path string
	// name is its file name, the plugin's argv[0].
	name string
}

// execPath names the open descriptor for execve.
func (b *verifiedBinary) execPath() string {
	return fmt.Sprintf("/proc/self/fd/%d", b.file.Fd())
}

func (b *verifiedBinary) Close() error { return b.file.Close() }

// openVerifiedBinary opens dir/name and refuses it, naming the path and the
// problem, unless the directory and the file are writable by their owner
// only, owned by root (or, for a core not running as root, by root or the
// core's user), and the file is an executable regular file reached without
// a symlink. pin, if not empty, is the sha256 the content must have: it is
// hashed afresh every time. euid is the core's effective uid.
func openVerifiedBinary(dir, name, pin string, euid int) (*verifiedBinary, error) {
	if err := checkBinaryName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	if err := checkDirParents(dir); err != nil {
		return nil, err
	}
	// O_NOFOLLOW: a symlinked directory could be pointed elsewhere by
	// whoever may write the link's directory.
	dirFD, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && isSymlink(dir):
		return nil, fmt.Errorf("plugin directory %s is a symlink; expected the directory itself (a link can be pointed elsewhere)", dir)
	case err != nil:
		return nil, fmt.Errorf("plugin directory %s: %w", dir, err)
	}
	defer unix.Close(dirFD)
	var dirStat unix.Stat_t
	if err := unix.Fstat(dirFD, &dirStat); err != nil {
		return nil, fmt.Errorf("plugin directory %s: %w", dir, err)
	}
	if err := checkOwnerAndMode("plugin directory", dir, &dirStat, euid); err != nil {
		return nil, err
	}
	// O_NOFOLLOW refuses a symlink; O_NONBLOCK keeps a FIFO planted under
	// the name from blocking the open (fstat refuses it next).
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("plugin binary %s does not exist", path)
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("plugin binary %s is a symlink; expected a regular file (symlinks are refused so that what is checked is what runs)", path)
	case err != nil:
		return nil, fmt.Errorf("plugin binary %s: %w", path, err)
	}
	bin := &verifiedBinary{file: os.NewFile(uintptr(fd), path), path: path, name: name}
	if err := bin.verify(euid, pin); err != nil {
		bin.Close()
		return nil, err
	}
	return bin, nil
}

func (b *verifiedBinary) verify(euid int, pin string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(b.file.Fd()), &st); err != nil {
		return fmt.Errorf("plugin binary %s: %w", b.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("plugin binary %s is %s; expected a regular file", b.path, fileType(st.Mode))
	}
	if err := checkOwnerAndMode("plugin binary", b.path, &st, euid); err != nil {
		return err
	}
	if st.Mode&0o111 == 0 {
		return fmt.Errorf("plugin binary %s is not executable (mode %04o); expected e.g. 0755", b.path, st.Mode&0o7777)
	}
	if pin == "" {
		return nil
	}
	digest, err := b.sha256()
	if err != nil {
		return err
	}
	if digest != pin {
		return fmt.Errorf("plugin binary %s has sha256 %s; the config pins %s", b.path, digest, pin)
	}
	return nil
}

// sha256 hashes the content through the open descriptor, with positioned
// reads to the end of the file, and without read-ahead. Read-ahead would
// fill the page cache with large folios (up to 2 MB), and on kernels that
// map a whole folio at a page fault (6.18 here) every process running the
// binary would then map several times the code it touches: the built-in
// plugins mapped about 800 KiB per touched page instead of 64 KiB after a hash
// with read-ahead.
func (b *verifiedBinary) sha256() (string, error) {
	// Advice only: on failure the hash is as right, just read differently.
	_ = unix.Fadvise(int(b.file.Fd()), 0, 0, unix.FADV_RANDOM)
	digest, err := contentSHA256(io.NewSectionReader(b.file, 0, math.MaxInt64))
	if err != nil {
		return "", fmt.Errorf("plugin binary %s: hash: %w", b.path, err)
	}
	return digest, nil
}

func contentSHA256(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkDirParents refuses a plugin directory in a directory that anyone
// may write without the sticky bit: anyone could rename the plugin
// directory away and put their own in its place. (/tmp, sticky, is fine:
// only the owner may rename there.)
func checkDirParents(dir string) error {
	for parent := filepath.Dir(dir); ; parent = filepath.Dir(parent) {
		var st unix.Stat_t
		if err := unix.Stat(parent, &st); err != nil {
			return fmt.Errorf("plugin directory %s: parent %s: %w", dir, parent, err)
		}
		if st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0 {
			return fmt.Errorf("plugin directory %s sits in %s, which anyone may write (mode %04o, no sticky bit); expected parents writable by their owner only",
				dir, parent, st.Mode&0o7777)
		}
		if parent == filepath.Dir(parent) {
			return nil
		}
	}
}

func isSymlink(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// checkOwnerAndMode refuses a file or directory that anyone but its owner
// may write, or whose owner the core does not trust.
func checkOwnerAndMode(what, path string, st *unix.Stat_t, euid int) error {
	if perm := st.Mode & 0o7777; perm&0o022 != 0 {
		return fmt.Errorf("%s %s is writable by group or others (mode %04o); expected write permission for its owner only, e.g. 0755", what, path, perm)
	}
	switch {
	case euid == 0 && st.Uid != 0:
		return fmt.Errorf("%s %s is owned by uid %d; the core runs as root and trusts only files owned by root", what, path, st.Uid)
	case euid != 0 && st.Uid != 0 && int(st.Uid) != euid:
		return fmt.Errorf("%s %s is owned by uid %d; expected root or the core's own uid %d", what, path, st.Uid, euid)
	}
	return nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	default:
		return "not a regular file"
	}
}
