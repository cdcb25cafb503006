package stats

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func u(v uint64) *uint64 { return &v }
func i(v int64) *int64   { return &v }

// at returns distinct times, so that a field converted from the wrong
// source shows.
func at(n int) *timestamppb.Timestamp {
	return timestamppb.New(time.Date(2026, 5, 6, 7, 8, n, 0, time.UTC))
}

func mt(n int) metav1.Time { return metav1.NewTime(at(n).AsTime()) }

// Every field of the wire types set, each to its own value (n picks them).
func wireCPU(n int) *typesv1.CPUStats {
	return &typesv1.CPUStats{Time: at(n), UsageNanoCores: u(uint64(n) + 1), UsageCoreNanoSeconds: u(uint64(n) + 2), Psi: wirePSI(n)}
}
func wirePSI(n int) *typesv1.PSIStats {
	f := float64(n)
	return &typesv1.PSIStats{
		Full: &typesv1.PSIData{Total: uint64(n) + 3, Avg10: f + .1, Avg60: f + .2, Avg300: f + .3},
		Some: &typesv1.PSIData{Total: uint64(n) + 4, Avg10: f + .4, Avg60: f + .5, Avg300: f + .6},
	}
}
func wireMemory(n int) *typesv1.MemoryStats {
	v := uint64(n)
	return &typesv1.MemoryStats{Time: at(n), AvailableBytes: u(v + 1), UsageBytes: u(v + 2), WorkingSetBytes: u(v + 3),
		RssBytes: u(v + 4), PageFaults: u(v + 5), MajorPageFaults: u(v + 6), Psi: wirePSI(n)}
}
func wireFs(n int) *typesv1.FsStats {
	v := uint64(n)
	return &typesv1.FsStats{Time: at(n), AvailableBytes: u(v + 1), CapacityBytes: u(v + 2), UsedBytes: u(v + 3),
		InodesFree: u(v + 4), Inodes: u(v + 5), InodesUsed: u(v + 6)}
}
func wireSwap(n int) *typesv1.SwapStats {
	return &typesv1.SwapStats{Time: at(n), SwapAvailableBytes: u(uint64(n) + 1), SwapUsageBytes: u(uint64(n) + 2)}
}
func wireInterface(name string, n int) *typesv1.InterfaceStats {
	v := uint64(n)
	return &typesv1.InterfaceStats{Name: name, RxBytes: u(v + 1), RxErrors: u(v + 2), TxBytes: u(v + 3), TxErrors: u(v + 4)}
}
func wireNetwork(n int) *typesv1.NetworkStats {
	return &typesv1.NetworkStats{Time: at(n), DefaultInterface: wireInterface("eth0", n),
		Interfaces: []*typesv1.InterfaceStats{wireInterface("eth0", n), wireInterface("eth1", n+10)}}
}
func wireContainer(name string, n int) *typesv1.ContainerStats {
	return &typesv1.ContainerStats{
		Name: name, StartTime: at(n), Cpu: wireCPU(n + 1), Memory: wireMemory(n + 2),
		Io:           &typesv1.IOStats{Time: at(n + 3), Psi: wirePSI(n + 3)},
		Accelerators: []*typesv1.AcceleratorStats{{Make: "nvidia", Model: "t4", Id: "gpu-0", MemoryTotal: 16, MemoryUsed: 4, DutyCycle: 50}},
		Rootfs:       wireFs(n + 4), Logs: wireFs(n + 5), Swap: wireSwap(n + 6),
	}
}

// The same values in v1alpha1.
func apiCPU(n int) *statsapi.CPUStats {
	return &statsapi.CPUStats{Time: mt(n), UsageNanoCores: u(uint64(n) + 1), UsageCoreNanoSeconds: u(uint64(n) + 2), PSI: apiPSI(n)}
}
func apiPSI(n int) *statsapi.PSIStats {
	f := float64(n)
	return &statsapi.PSIStats{
		Full: statsapi.PSIData{Total: uint64(n) + 3, Avg10: f + .1, Avg60: f + .2, Avg300: f + .3},
		Some: statsapi.PSIData{Total: uint64(n) + 4, Avg10: f + .4, Avg60: f + .5, Avg300: f + .6},
	}
}
func apiMemory(n int) *statsapi.MemoryStats {
	v := uint64(n)
	return &statsapi.MemoryStats{Time: mt(n), AvailableBytes: u(v + 1), UsageBytes: u(v + 2), WorkingSetBytes: u(v + 3),
		RSSBytes: u(v + 4), PageFaults: u(v + 5), MajorPageFaults: u(v + 6), PSI: apiPSI(n)}
}
func apiFs(n int) *statsapi.FsStats {
	v := uint64(n)
	return &statsapi.FsStats{Time: mt(n), AvailableBytes: u(v + 1), CapacityBytes: u(v + 2), UsedBytes: u(v + 3),
		InodesFree: u(v + 4), Inodes: u(v + 5), InodesUsed: u(v + 6)}
}
func apiSwap(n int) *statsapi.SwapStats {
	return &statsapi.SwapStats{Time: mt(n), SwapAvailableBytes: u(uint64(n) + 1), SwapUsageBytes: u(uint64(n) + 2)}
}
func apiInterface(name string, n int) statsapi.InterfaceStats {
	v := uint64(n)
	return statsapi.InterfaceStats{Name: name, RxBytes: u(v + 1), RxErrors: u(v + 2), TxBytes: u(v + 3), TxErrors: u(v + 4)}
}
func apiNetwork(n int) *statsapi.NetworkStats {
	return &statsapi.NetworkStats{Time: mt(n), InterfaceStats: apiInterface("eth0", n),
		Interfaces: []statsapi.InterfaceStats{apiInterface("eth0", n), apiInterface("eth1", n+10)}}
}
func apiContainer(name string, n int) statsapi.ContainerStats {
	return statsapi.ContainerStats{
		Name: name, StartTime: mt(n), CPU: apiCPU(n + 1), Memory: apiMemory(n + 2),
		IO:           &statsapi.IOStats{Time: mt(n + 3), PSI: apiPSI(n + 3)},
		Accelerators: []statsapi.AcceleratorStats{{Make: "nvidia", Model: "t4", ID: "gpu-0", MemoryTotal: 16, MemoryUsed: 4, DutyCycle: 50}},
		Rootfs:       apiFs(n + 4), Logs: apiFs(n + 5), Swap: apiSwap(n + 6),
	}
}

func fullSample() *Sample {
	return &Sample{
		Node: &typesv1.NodeStats{
			NodeName: "node-a", SystemContainers: []*typesv1.ContainerStats{wireContainer("pods", 1)},
			StartTime: at(2), Cpu: wireCPU(3), Memory: wireMemory(4), Io: &typesv1.IOStats{Time: at(5), Psi: wirePSI(5)},
			Network: wireNetwork(6), Fs: wireFs(7), Runtime: &typesv1.RuntimeStats{ImageFs: wireFs(8), ContainerFs: wireFs(9)},
			Rlimit: &typesv1.RlimitStats{Time: at(10), MaxPid: i(32768), NumOfRunningProcesses: i(99)}, Swap: wireSwap(11),
		},
		Pods: []*typesv1.PodStats{{
			PodRef: &typesv1.PodReference{Name: "web", Namespace: "shop", Uid: "u1"}, StartTime: at(20),
			Containers: []*typesv1.ContainerStats{wireContainer("app", 21), wireContainer("side", 31)},
			Cpu:        wireCPU(41), Memory: wireMemory(42), Io: &typesv1.IOStats{Time: at(43), Psi: wirePSI(43)}, Network: wireNetwork(44),
			VolumeStats: []*typesv1.VolumeStats{
				{Fs: wireFs(45), Name: "scratch"},
				{Fs: wireFs(46), Name: "data", PvcRef: &typesv1.PVCReference{Name: "claim", Namespace: "shop"}},
			},
			EphemeralStorage: wireFs(47), ProcessStats: &typesv1.ProcessStats{ProcessCount: u(7)}, Swap: wireSwap(48),
		}},
	}
}

func fullSummary() *statsapi.Summary {
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName: "node-a", SystemContainers: []statsapi.ContainerStats{apiContainer("pods", 1)},
			StartTime: mt(2), CPU: apiCPU(3), Memory: apiMemory(4), IO: &statsapi.IOStats{Time: mt(5), PSI: apiPSI(5)},
			Network: apiNetwork(6), Fs: apiFs(7), Runtime: &statsapi.RuntimeStats{ImageFs: apiFs(8), ContainerFs: apiFs(9)},
			Rlimit: &statsapi.RlimitStats{Time: mt(10), MaxPID: i(32768), NumOfRunningProcesses: i(99)}, Swap: apiSwap(11),
		},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "web", Namespace: "shop", UID: "u1"}, StartTime: mt(20),
			Containers: []statsapi.ContainerStats{apiContainer("app", 21), apiContainer("side", 31)},
			CPU:        apiCPU(41), Memory: apiMemory(42), IO: &statsapi.IOStats{Time: mt(43), PSI: apiPSI(43)}, Network: apiNetwork(44),
			VolumeStats: []statsapi.VolumeStats{
				{FsStats: *apiFs(45), Name: "scratch"},
				{FsStats: *apiFs(46), Name: "data", PVCRef: &statsapi.PVCReference{Name: "claim", Namespace: "shop"}},
			},
			EphemeralStorage: apiFs(47), ProcessStats: &statsapi.ProcessStats{ProcessCount: u(7)}, Swap: apiSwap(48),
		}},
	}
}

func TestToSummary(t *testing.T) {
	tests := []struct {
		name string
		in   *Sample
		want *statsapi.Summary
	}{
		{"every field", fullSample(), fullSummary()},
		{"unset stays unset", &Sample{
			Node: &typesv1.NodeStats{NodeName: "n"},
			Pods: []*typesv1.PodStats{{PodRef: &typesv1.PodReference{Name: "p"}, VolumeStats: []*typesv1.VolumeStats{{Name: "v"}},
				Network: &typesv1.NetworkStats{}, Cpu: &typesv1.CPUStats{}}},
		}, &statsapi.Summary{
			Node: statsapi.NodeStats{NodeName: "n"},
			Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{Name: "p"}, VolumeStats: []statsapi.VolumeStats{{Name: "v"}},
				Network: &statsapi.NetworkStats{}, CPU: &statsapi.CPUStats{}}},
		}},
		{"cAdvisor's fields stay out: block I/O without pressure is no io", &Sample{
			Node: &typesv1.NodeStats{NodeName: "n", Io: &typesv1.IOStats{Time: at(1), Devices: []*typesv1.DeviceIOStats{{Device: "/dev/vda", Reads: u(1)}}},
				Memory: &typesv1.MemoryStats{CacheBytes: u(5)}, Cpu: &typesv1.CPUStats{CfsPeriods: u(3), CfsThrottledPeriods: u(1)}},
		}, &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n", Memory: &statsapi.MemoryStats{}, CPU: &statsapi.CPUStats{}}, Pods: []statsapi.PodStats{}}},
		{"no pods is an empty list, not null", &Sample{Node: &typesv1.NodeStats{NodeName: "n"}},
			&statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n"}, Pods: []statsapi.PodStats{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toSummary(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(tt.want, "", " ")
				t.Errorf("got:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

// TestToSummaryCoversEveryField fails when v1alpha1 gains a field the
// conversion does not fill: the full sample must leave no field of the
// result at its zero value, but for those the wire types cannot carry.
func TestToSummaryCoversEveryField(t *testing.T) {
	notOnTheWire := map[string]bool{"UserDefinedMetrics": true, "VolumeHealthStats": true}
	var zero []string
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				zero = append(zero, path)
				return
			}
			walk(v.Elem(), path)
		case reflect.Slice:
			if v.Len() == 0 {
				zero = append(zero, path)
			}
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), path+"[]")
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeOf(metav1.Time{}) {
				if mtime := v.Interface().(metav1.Time); mtime.IsZero() {
					zero = append(zero, path)
				}
				return
			}
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if !notOnTheWire[f.Name] {
					walk(v.Field(i), path+"."+f.Name)
				}
			}
		default:
			if v.IsZero() {
				zero = append(zero, path)
			}
		}
	}
	sample := fullSample()
	// The sample's first volume is an emptyDir; here it claims a PVC too.
	sample.Pods[0].VolumeStats[0].PvcRef = &typesv1.PVCReference{Name: "c", Namespace: "n"}
	walk(reflect.ValueOf(toSummary(sample)).Elem(), "Summary")
	if len(zero) > 0 {
		t.Errorf("fields the conversion leaves empty although the sample sets every field:\n%s", strings.Join(zero, "\n"))
	}
}

func TestSummaryJSONShape(t *testing.T) {
	b, err := json.Marshal(toSummary(fullSample()))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	pod := doc["pods"].([]any)[0].(map[string]any)
	node := doc["node"].(map[string]any)
	for _, key := range []string{"podRef", "startTime", "containers", "cpu", "memory", "io", "network", "volume", "ephemeral-storage", "process_stats", "swap"} {
		if _, ok := pod[key]; !ok {
			t.Errorf("pod JSON has no %q: %s", key, b)
		}
	}
	for _, key := range []string{"nodeName", "systemContainers", "startTime", "runtime", "rlimit"} {
		if _, ok := node[key]; !ok {
			t.Errorf("node JSON has no %q", key)
		}
	}
	// The default interface is inlined into network; rlimit's keys are
	// maxpid and curproc.
	if network := pod["network"].(map[string]any); network["name"] != "eth0" || network["rxBytes"] != float64(45) {
		t.Errorf("network = %v, want the default interface inlined", network)
	}
	if rlimit := node["rlimit"].(map[string]any); rlimit["maxpid"] != float64(32768) || rlimit["curproc"] != float64(99) {
		t.Errorf("rlimit = %v", rlimit)
	}
	// A volume's FsStats is inlined too.
	if volume := pod["volume"].([]any)[1].(map[string]any); volume["usedBytes"] != float64(49) || volume["pvcRef"] == nil {
		t.Errorf("volume = %v", volume)
	}
}

func TestOnlyCPUAndMemory(t *testing.T) {
	s := toSummary(fullSample())
	onlyCPUAndMemory(s)
	want := fullSummary()
	sys := want.Node.SystemContainers[0]
	want.Node = statsapi.NodeStats{NodeName: "node-a", StartTime: mt(2), CPU: apiCPU(3), Memory: apiMemory(4), Swap: apiSwap(11),
		SystemContainers: []statsapi.ContainerStats{{Name: "pods", StartTime: sys.StartTime, CPU: sys.CPU, Memory: sys.Memory, Swap: sys.Swap}}}
	p := want.Pods[0]
	var containers []statsapi.ContainerStats
	for _, c := range p.Containers {
		containers = append(containers, statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap})
	}
	want.Pods[0] = statsapi.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, Containers: containers, CPU: p.CPU, Memory: p.Memory, Swap: p.Swap}
	if !reflect.DeepEqual(s, want) {
		g, _ := json.MarshalIndent(s, "", " ")
		t.Errorf("got:\n%s", g)
	}
}
