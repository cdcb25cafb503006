package eviction

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/procfs"

	"github.com/microlet/microlet/core/kinds/stats"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// DefaultPressurePollInterval is how often the manager reads the memory
// pressure stall averages while a strategy asks to be woken by them. The
// kernel recomputes the averages every 2 s; polling twice as often sees a
// new value at most a second late.
const DefaultPressurePollInterval = time.Second

// Pressure reads memory pressure stall information (PSI): the node's from
// /proc/pressure/memory, a cgroup's from its memory.pressure in the unified
// hierarchy. Cgroup v2 has the files for every cgroup; a hybrid host (v1
// controllers with the unified hierarchy mounted beside them, where runc
// places containers too) has them as well, since PSI is kept for the
// unified hierarchy whatever controllers it has. A pure v1 host has the
// node's file only. Either file is absent on a kernel without PSI (psi=0).
type Pressure struct {
	// ProcFS is where procfs is mounted; "" is /proc.
	ProcFS string
	// Unified is the unified hierarchy's mount point; "" when none is
	// mounted: no pod has pressure information then.
	Unified string
}

// Node is the node's memory pressure.
func (p *Pressure) Node() (*typesv1.PSIStats, error) {
	root := p.ProcFS
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	return readPSI(root, "memory")
}

// Cgroup is the memory pressure of a cgroup, named relative to the
// hierarchy's root as pod views name them.
func (p *Pressure) Cgroup(cgroup string) (*typesv1.PSIStats, error) {
	if p.Unified == "" {
		return nil, fmt.Errorf("no unified cgroup hierarchy is mounted")
	}
	// procfs reads <root>/pressure/<resource>; a cgroup's file is
	// <dir>/memory.pressure, the same format, which "../memory.pressure"
	// names once the path is cleaned.
	return readPSI(filepath.Join(p.Unified, cgroup), "../memory.pressure")
}

func readPSI(root, resource string) (*typesv1.PSIStats, error) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, err
	}
	psi, err := fs.PSIStatsForResource(resource)
	if err != nil {
		return nil, err
	}
	return &typesv1.PSIStats{Some: psiData(psi.Some), Full: psiData(psi.Full)}, nil
}

// psiData is one line: the total in the kernel's microseconds, as cAdvisor
// and the stats plugin pass it, the averages in percent.
func psiData(l *procfs.PSILine) *typesv1.PSIData {
	if l == nil {
		return nil
	}
	return &typesv1.PSIData{Total: l.Total, Avg10: l.Avg10, Avg60: l.Avg60, Avg300: l.Avg300}
}

// addPressure fills in the memory pressure of the node and of each pod with
// a cgroup where a sample lacks it, read now. The stats plugin's fresh
// sample already carries what it could read (the node's on any kernel with
// PSI, the pods' on cgroup v2), the same kernel files read moments before:
// reading them again would measure one fact twice a cycle. What the sample
// lacks is the core's own measurement's, and on a hybrid host the pods'.
// What cannot be read is left as the sample had it.
func (p *Pressure) addPressure(sample *stats.Sample, pods []*typesv1.Pod) {
	if sample.Node.GetMemory().GetPsi() == nil {
		if psi, err := p.Node(); err == nil {
			if sample.Node.Memory == nil {
				sample.Node.Memory = &typesv1.MemoryStats{}
			}
			sample.Node.Memory.Psi = psi
		}
	}
	if p.Unified == "" {
		return
	}
	var cgroups map[string]string
	for _, ps := range sample.Pods {
		if ps.GetMemory().GetPsi() != nil {
			continue
		}
		if cgroups == nil {
			cgroups = make(map[string]string, len(pods))
			for _, pod := range pods {
				cgroups[pod.GetUid()] = pod.GetCgroupParent()
			}
		}
		cgroup := cgroups[ps.GetPodRef().GetUid()]
		if cgroup == "" {
			continue
		}
		psi, err := p.Cgroup(cgroup)
		if err != nil {
			continue // gone meanwhile, or not made yet
		}
		if ps.Memory == nil {
			ps.Memory = &typesv1.MemoryStats{}
		}
		ps.Memory.Psi = psi
	}
}

// podCgroup is a pod as the pressure poll reads it.
type podCgroup struct {
	uid, name string
	// cgroup is the pod's cgroup, from the hierarchy's root.
	cgroup string
}

// reached names the first level of levels that the node's or a listed
// pod's memory pressure is above now; "" when none is. Only the files the
// levels need are read: the node's one file, and each listed active pod's.
func (p *Pressure) reached(levels []*evictionv1.PressureNotification, pods func() []podCgroup) string {
	var node *typesv1.PSIStats
	var podPSI map[string]podPressure
	for _, l := range levels {
		if !l.GetPods() {
			if node == nil {
				var err error
				if node, err = p.Node(); err != nil {
					continue
				}
			}
			if atOrAbove(node, l) {
				return "node " + levelString(l)
			}
			continue
		}
		if podPSI == nil {
			podPSI = p.podPressure(pods(), levels)
		}
		for _, uid := range l.GetPodUids() {
			if pp, ok := podPSI[uid]; ok && atOrAbove(pp.psi, l) {
				return "pod " + pp.name + " " + levelString(l)
			}
		}
	}
	return ""
}

// podPressure is one pod's memory pressure and its name for the log.
type podPressure struct {
	name string
	psi  *typesv1.PSIStats
}

// podPressure reads, by UID, the memory pressure of the pods that a level
// on pods lists.
func (p *Pressure) podPressure(pods []podCgroup, levels []*evictionv1.PressureNotification) map[string]podPressure {
	out := map[string]podPressure{}
	if p.Unified == "" {
		return out
	}
	listed := map[string]bool{}
	for _, l := range levels {
		for _, uid := range l.GetPodUids() {
			listed[uid] = true
		}
	}
	for _, pod := range pods {
		if !listed[pod.uid] {
			continue
		}
		if psi, err := p.Cgroup(pod.cgroup); err == nil {
			out[pod.uid] = podPressure{name: pod.name, psi: psi}
		}
	}
	return out
}

// atOrAbove reports whether an average of psi is above a level.
func atOrAbove(psi *typesv1.PSIStats, l *evictionv1.PressureNotification) bool {
	line := psi.GetSome()
	if l.GetLine() == "full" {
		line = psi.GetFull()
	}
	if line == nil {
		return false
	}
	var avg float64
	switch l.GetWindowSeconds() {
	case 10:
		avg = line.GetAvg10()
	case 60:
		avg = line.GetAvg60()
	case 300:
		avg = line.GetAvg300()
	default:
		return false
	}
	return avg > l.GetPercent()
}

func levelString(l *evictionv1.PressureNotification) string {
	return fmt.Sprintf("%s.avg%d>%g", l.GetLine(), l.GetWindowSeconds(), l.GetPercent())
}
