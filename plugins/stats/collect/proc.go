package collect

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/microlet/microlet/plugins/stats/summary"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// ignoredInterfacePrefixes are the interfaces cadvisor leaves out of a
// network namespace's stats: loopback and the host ends of container
// links.
var ignoredInterfacePrefixes = []string{"lo", "veth", "docker", "nerdctl"}

// Proc reads node-wide counters under a procfs mount.
type Proc struct {
	fs   procfs.FS
	root string
}

// OpenProc opens the procfs mounted at root.
func OpenProc(root string) (*Proc, error) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("procfs at %s: %w", root, err)
	}
	return &Proc{fs: fs, root: root}, nil
}

// Meminfo is /proc/meminfo.
func (p *Proc) Meminfo() (procfs.Meminfo, error) { return p.fs.Meminfo() }

// BootTime is when the node booted (btime in /proc/stat).
func (p *Proc) BootTime() (time.Time, error) {
	stat, err := p.fs.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(stat.BootTime), 0), nil
}

// CPUUsageNanos is the cpu time every cpu spent on work since boot, from
// /proc/stat: user (which includes guest), nice, system, irq, softirq and
// steal.
func (p *Proc) CPUUsageNanos() (uint64, error) {
	stat, err := p.fs.Stat()
	if err != nil {
		return 0, err
	}
	c := stat.CPUTotal
	return uint64((c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal) * float64(time.Second)), nil
}

// Pressure is the node's pressure stall information for resource ("cpu",
// "memory", "io"); nil when the kernel offers none.
func (p *Proc) Pressure(resource string) (*typesv1.PSIStats, error) {
	psi, err := optional(readPressure(filepath.Join(p.root, "pressure", resource)))
	if err != nil || psi == nil {
		return nil, err
	}
	return *psi, nil
}

// Rlimit is the node's task limit, min(kernel.pid_max, kernel.threads-max),
// and its task count, from /proc/loadavg, as the kubelet's pidlimit.Stats
// reads them. What cannot be read is left out.
func (p *Proc) Rlimit() *summary.RlimitSample {
	out := &summary.RlimitSample{Time: time.Now()}
	for _, sysctl := range []string{"kernel.pid_max", "kernel.threads-max"} {
		values, err := p.fs.SysctlInts(sysctl)
		if err != nil || len(values) != 1 {
			continue
		}
		if limit := int64(values[0]); out.MaxPID == nil || limit < *out.MaxPID {
			out.MaxPID = &limit
		}
	}
	if tasks, err := p.tasks(); err == nil {
		out.Tasks = &tasks
	}
	return out
}

// tasks is the total in /proc/loadavg's fourth field ("2/3518"): every
// task on the node. sysinfo(2) would truncate it past 65535.
func (p *Proc) tasks() (int64, error) {
	path := filepath.Join(p.root, "loadavg")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(b))
	if len(fields) < 5 {
		return 0, fmt.Errorf("%s: expected 5 fields, got %q", path, b)
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0, fmt.Errorf("%s: expected running/total tasks in the fourth field, got %q", path, fields[3])
	}
	return strconv.ParseInt(total, 10, 64)
}

// podDefaultInterface is the interface a pod's stats take as the default:
// the kubelet's defaultNetworkInterfaceName, what CNI plugins name the
// pod's end of its link.
const podDefaultInterface = "eth0"

// Network is the node's interfaces from /proc/net/dev (without those
// cadvisor ignores) and the interface of its default route. When the
// route table cannot be read, the interfaces come with the error.
func (p *Proc) Network() (*summary.NetworkSample, error) {
	dev, err := p.fs.NetDev()
	if err != nil {
		return nil, err
	}
	out := network(dev)
	out.Default, err = p.defaultRouteInterface()
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return out, err
}

// ProcessNetwork is the interfaces of the network namespace process pid
// lives in, from /proc/<pid>/net/dev, as cadvisor reads a container's:
// for a pod, pid is its sandbox's process.
func (p *Proc) ProcessNetwork(pid int) (*summary.NetworkSample, error) {
	proc, err := p.fs.Proc(pid)
	if err != nil {
		return nil, err
	}
	dev, err := proc.NetDev()
	if err != nil {
		return nil, err
	}
	out := network(dev)
	out.Default = podDefaultInterface
	return out, nil
}

// network lists the interfaces of dev, by name, without those cadvisor
// ignores.
func network(dev procfs.NetDev) *summary.NetworkSample {
	out := &summary.NetworkSample{Time: time.Now()}
	for _, name := range slices.Sorted(maps.Keys(dev)) {
		if slices.ContainsFunc(ignoredInterfacePrefixes, func(prefix string) bool { return strings.HasPrefix(name, prefix) }) {
			continue
		}
		line := dev[name]
		out.Interfaces = append(out.Interfaces, &typesv1.InterfaceStats{
			Name:     name,
			RxBytes:  ptr(line.RxBytes),
			RxErrors: ptr(line.RxErrors),
			TxBytes:  ptr(line.TxBytes),
			TxErrors: ptr(line.TxErrors),
			// The rest is cAdvisor's, for /metrics/cadvisor.
			RxPackets: ptr(line.RxPackets),
			RxDropped: ptr(line.RxDropped),
			TxPackets: ptr(line.TxPackets),
			TxDropped: ptr(line.TxDropped),
		})
	}
	return out
}

// defaultRouteInterface is the interface of the IPv4 default route with
// the lowest metric; "" when there is none.
func (p *Proc) defaultRouteInterface() (string, error) {
	routes, err := p.fs.NetRoute()
	if err != nil {
		return "", err
	}
	const routeUp = 0x1 // RTF_UP
	best, metric := "", uint32(0)
	for _, r := range routes {
		if r.Destination != 0 || r.Mask != 0 || r.Flags&routeUp == 0 {
			continue
		}
		if best == "" || r.Metric < metric {
			best, metric = r.Iface, r.Metric
		}
	}
	return best, nil
}
