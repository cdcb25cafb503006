package machine

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Identity is who the machine is, as cAdvisor's machine and version info
// say it: the node's status and /spec/ show it.
type Identity struct {
	MachineID, SystemUUID, BootID string
	// KernelVersion is uname's release; OSImage os-release's PRETTY_NAME.
	KernelVersion, OSImage string
}

// ReadIdentity reads the identity where cAdvisor does: /etc/machine-id
// (or D-Bus's copy), the DMI product UUID, the kernel's boot ID, uname and
// /etc/os-release. What cannot be read stays empty, except the OS image,
// which is "Linux" as cAdvisor reports it then.
func ReadIdentity(opts Options) Identity {
	procRoot, sysRoot := orDefault(opts.ProcFS, "/proc"), orDefault(opts.SysFS, "/sys")
	id := Identity{
		MachineID:  firstID("/etc/machine-id", "/var/lib/dbus/machine-id"),
		SystemUUID: firstID(filepath.Join(sysRoot, "class/dmi/id/product_uuid")),
		BootID:     firstID(filepath.Join(procRoot, "sys/kernel/random/boot_id")),
		OSImage:    osImage("/etc/os-release"),
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		id.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	}
	return id
}

// firstID is the content of the first of paths that can be read.
func firstID(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

func osImage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "Linux"
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if unquoted, err := strconv.Unquote(v); err == nil {
			return unquoted
		}
		return strings.Trim(v, `'"`)
	}
	return "Linux"
}
