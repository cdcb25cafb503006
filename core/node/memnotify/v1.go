package memnotify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const sourceThreshold = "threshold"

// thresholdSpec is a cgroup v1 memcg usage threshold in dir, the memory
// controller's directory of the cgroup.
func thresholdSpec(dir string, t Threshold) watchSpec {
	event := Event{Cgroup: t.Cgroup, Source: sourceThreshold}
	return watchSpec{
		key:   watchKey(sourceThreshold, t.Cgroup, t.UsageBytes),
		event: event,
		file:  filepath.Join(dir, "memory.usage_in_bytes"),
		open:  func() (*watch, error) { return openThreshold(dir, t.UsageBytes, event) },
	}
}

// openThreshold registers an eventfd that the kernel signals whenever the
// cgroup's memory.usage_in_bytes crosses level, either way: the kernel's
// memcg threshold API (Documentation/admin-guide/cgroup-v1/memory.rst, "Memory
// thresholds"), as upstream's linuxCgroupNotifier. Closing the eventfd
// unregisters it.
func openThreshold(dir string, level uint64, event Event) (*watch, error) {
	usage, err := os.Open(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		usage.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	closeAll := func() {
		unix.Close(efd)
		usage.Close()
	}
	control := filepath.Join(dir, "cgroup.event_control")
	if err := os.WriteFile(control, []byte(fmt.Sprintf("%d %d %d", efd, usage.Fd(), level)), 0); err != nil {
		closeAll()
		return nil, err
	}
	return &watch{
		fd:     efd,
		events: unix.EPOLLIN,
		event:  event,
		fired:  func() (bool, error) { return drainEventfd(efd) },
		exceeded: func() (bool, error) {
			used, err := readUint(usage)
			return used >= level, err
		},
		closer: closeAll,
	}, nil
}

// readUint reads a counter file from its start: the open file the threshold
// is registered on, so that it reads the same cgroup's usage.
func readUint(f *os.File) (uint64, error) {
	var buf [32]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64)
}

// drainEventfd resets an eventfd's counter so that epoll waits again.
func drainEventfd(fd int) (bool, error) {
	var buf [8]byte
	_, err := unix.Read(fd, buf[:])
	if errors.Is(err, unix.EAGAIN) {
		return false, nil // another wakeup took it
	}
	return err == nil, err
}
