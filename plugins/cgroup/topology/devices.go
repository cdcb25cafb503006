package topology

import (
	"slices"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Devices is the devices' hint provider (upstream devicemanager's
// GetTopologyHints): the core sends every device of each extended
// resource the pod asks for, where it sits and whether it is free. The
// core's devices manager picks the devices after this admission, on the
// nodes of the hint each container got (Affinities); Allocate only sets
// aside as many free devices as a container asks for, those on the hint's
// nodes first, so that the next container's hints see what is left as
// upstream's do (a regular init container's devices are reusable by the
// containers after it).
type Devices struct {
	pod       *typesv1.Pod
	nodes     []int
	resources map[string]*resourceDevices
	// affinities are the hints containers asking for devices got, in
	// the order they got them.
	affinities []*cgroupv1.ContainerAffinity
}

type resourceDevices struct {
	all  [][]int
	free []*cgroupv1.DeviceNUMA
	// reusable are the devices the pod's ended init containers held.
	reusable []*cgroupv1.DeviceNUMA
	aligned  bool
}

// NewDevices is the devices provider of pod's admission on a node of the
// given NUMA nodes.
func NewDevices(pod *typesv1.Pod, nodes []int, resources []*cgroupv1.ResourceDevices) *Devices {
	d := &Devices{pod: pod, nodes: nodes, resources: map[string]*resourceDevices{}}
	for _, r := range resources {
		rd := &resourceDevices{}
		for _, dev := range r.GetDevices() {
			rd.all = append(rd.all, ints(dev.GetNumaNodes()))
			rd.aligned = rd.aligned || len(dev.GetNumaNodes()) > 0
			if dev.GetFree() {
				rd.free = append(rd.free, dev)
			}
		}
		d.resources[r.GetResource()] = rd
	}
	return d
}

func ints(in []int64) []int {
	out := make([]int, 0, len(in))
	for _, n := range in {
		out = append(out, int(n))
	}
	return out
}

// requests are a container's device counts, for the resources the core
// sent devices of.
func (d *Devices) requests(c *typesv1.Container) map[string]int {
	out := map[string]int{}
	for name, n := range c.GetResources().GetLimits().GetOther() {
		if _, ok := d.resources[name]; ok && n > 0 {
			out[name] = int(n)
		}
	}
	return out
}

func (d *Devices) hints(req map[string]int, reuse bool) Hints {
	if len(req) == 0 {
		return nil
	}
	out := Hints{}
	for name, n := range req {
		r := d.resources[name]
		if !r.aligned {
			out[name] = nil
			continue
		}
		var reusable [][]int
		if reuse {
			for _, dev := range r.reusable {
				reusable = append(reusable, ints(dev.GetNumaNodes()))
			}
		}
		if len(r.free)+len(reusable) < n {
			out[name] = []Hint{}
			continue
		}
		var free [][]int
		for _, dev := range r.free {
			free = append(free, ints(dev.GetNumaNodes()))
		}
		out[name] = GenerateHints(d.nodes, r.all, free, reusable, n)
	}
	return out
}

// ContainerHints are the device hints of one container.
func (d *Devices) ContainerHints(c *typesv1.Container) Hints { return d.hints(d.requests(c), true) }

// PodHints are the device hints of the whole pod (upstream
// getPodDeviceRequest: the pod's effective limits).
func (d *Devices) PodHints() Hints {
	pod := d.pod
	req := map[string]int{}
	byRestartable := map[string]int{}
	for _, c := range pod.GetInitContainers() {
		for name, n := range d.requests(c) {
			if c.GetRestartable() {
				byRestartable[name] += n
			} else {
				req[name] = max(req[name], byRestartable[name]+n)
			}
		}
	}
	app := map[string]int{}
	for _, c := range pod.GetContainers() {
		for name, n := range d.requests(c) {
			app[name] += n
		}
	}
	for name, n := range app {
		req[name] = max(req[name], n+byRestartable[name])
	}
	return d.hints(req, false)
}

// Allocate sets aside the container's devices: reusable ones first, then
// free ones on the hint's nodes, then any.
func (d *Devices) Allocate(c *typesv1.Container, hint Hint) error {
	init := slices.Contains(d.pod.GetInitContainers(), c) && !c.GetRestartable()
	req := d.requests(c)
	if len(req) > 0 && hint.Affinity != 0 {
		a := &cgroupv1.ContainerAffinity{ContainerName: c.GetName()}
		for _, n := range hint.Affinity.Nodes() {
			a.NumaNodes = append(a.NumaNodes, int32(n))
		}
		d.affinities = append(d.affinities, a)
	}
	for name, n := range req {
		r := d.resources[name]
		var picked []*cgroupv1.DeviceNUMA
		take := func(from []*cgroupv1.DeviceNUMA, ok func(*cgroupv1.DeviceNUMA) bool) []*cgroupv1.DeviceNUMA {
			var rest []*cgroupv1.DeviceNUMA
			for _, dev := range from {
				if len(picked) < n && ok(dev) {
					picked = append(picked, dev)
				} else {
					rest = append(rest, dev)
				}
			}
			return rest
		}
		all := func(*cgroupv1.DeviceNUMA) bool { return true }
		r.reusable = take(r.reusable, all)
		r.free = take(r.free, func(dev *cgroupv1.DeviceNUMA) bool {
			return hint.Affinity == 0 || hint.Affinity.AnyOf(ints(dev.GetNumaNodes()))
		})
		r.free = take(r.free, all)
		if init {
			r.reusable = append(r.reusable, picked...)
		}
	}
	return nil
}

// Affinities are the NUMA nodes of the hint each container asking for
// devices got (upstream's topology manager store, which its device manager
// reads when it picks the devices); a hint without preference is left out.
func (d *Devices) Affinities() []*cgroupv1.ContainerAffinity { return d.affinities }
