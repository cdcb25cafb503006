package nodeapi

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/microlet/microlet/core/node/machine"
)

// machineInfo is cAdvisor's MachineInfo (github.com/google/cadvisor
// info/v1) in its JSON shape, as /spec/ served it. What microlet does not
// measure (NUMA topology, disks, NICs, NVM, cloud) is left empty, in the
// shape cAdvisor gives on a machine without them.
type machineInfo struct {
	Timestamp        time.Time                  `json:"timestamp"`
	CPUVendorID      string                     `json:"vendor_id"`
	NumCores         int                        `json:"num_cores"`
	NumPhysicalCores int                        `json:"num_physical_cores"`
	NumSockets       int                        `json:"num_sockets"`
	CPUFrequencyKHz  uint64                     `json:"cpu_frequency_khz"`
	MemoryCapacity   uint64                     `json:"memory_capacity"`
	SwapCapacity     uint64                     `json:"swap_capacity"`
	MemoryByType     map[string]memoryInfo      `json:"memory_by_type"`
	NVMInfo          nvmInfo                    `json:"nvm"`
	HugePages        []hugePagesInfo            `json:"hugepages"`
	MachineID        string                     `json:"machine_id"`
	SystemUUID       string                     `json:"system_uuid"`
	BootID           string                     `json:"boot_id"`
	Filesystems      []json.RawMessage          `json:"filesystems"`
	DiskMap          map[string]json.RawMessage `json:"disk_map"`
	NetworkDevices   []json.RawMessage          `json:"network_devices"`
	Topology         []json.RawMessage          `json:"topology"`
	CloudProvider    string                     `json:"cloud_provider"`
	InstanceType     string                     `json:"instance_type"`
	InstanceID       string                     `json:"instance_id"`
}

type memoryInfo struct {
	Capacity  uint64 `json:"capacity"`
	DimmCount uint   `json:"dimm_count"`
}

type nvmInfo struct {
	MemoryModeCapacity    uint64 `json:"memory_mode_capacity"`
	AppDirectModeCapacity uint64 `json:"app direct_mode_capacity"`
	AvgPowerBudget        uint   `json:"avg_power_budget"`
}

type hugePagesInfo struct {
	// PageSize is in KiB, as cAdvisor counts it.
	PageSize uint64 `json:"page_size"`
	NumPages uint64 `json:"num_pages"`
}

// spec serves /spec/: the machine as cAdvisor describes it.
func (h *handlers) spec() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := json.Marshal(h.machine())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// readMachineInfo reads what the machine is: the capacity and identity
// core/node/machine read at start, and the CPUs' layout and swap from /proc
// and /sys, where cAdvisor reads them. What cannot be read stays empty.
func readMachineInfo(procRoot, sysRoot string, capacity cpuMemory, id machine.Identity) machineInfo {
	info := machineInfo{
		Timestamp:      time.Now(),
		NumCores:       int(capacity.cpuMillis / 1000),
		MemoryCapacity: uint64(capacity.memoryBytes),
		MemoryByType:   map[string]memoryInfo{},
		HugePages:      []hugePagesInfo{},
		MachineID:      id.MachineID,
		SystemUUID:     id.SystemUUID,
		BootID:         id.BootID,
		Filesystems:    []json.RawMessage{},
		DiskMap:        map[string]json.RawMessage{},
		NetworkDevices: []json.RawMessage{},
		Topology:       []json.RawMessage{},
		CloudProvider:  "Unknown",
		InstanceType:   "Unknown",
		InstanceID:     "None",
	}
	for name, bytes := range capacity.hugePages {
		size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), v1.ResourceHugePagesPrefix))
		if err != nil || size.Value() == 0 {
			continue
		}
		info.HugePages = append(info.HugePages, hugePagesInfo{PageSize: uint64(size.Value() / 1024), NumPages: uint64(bytes / size.Value())})
	}
	proc, err := procfs.NewFS(procRoot)
	if err != nil {
		return info
	}
	if mem, err := proc.Meminfo(); err == nil && mem.SwapTotalBytes != nil {
		info.SwapCapacity = *mem.SwapTotalBytes
	}
	cpus, err := proc.CPUInfo()
	if err != nil || len(cpus) == 0 {
		return info
	}
	info.CPUVendorID = cpus[0].VendorID
	sockets, cores := map[string]bool{}, map[string]bool{}
	for _, c := range cpus {
		sockets[c.PhysicalID] = true
		cores[c.PhysicalID+"/"+c.CoreID] = true
	}
	info.NumSockets, info.NumPhysicalCores = len(sockets), len(cores)
	if khz, err := readUint(sysRoot + "/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		info.CPUFrequencyKHz = khz
	} else {
		info.CPUFrequencyKHz = uint64(cpus[0].CPUMHz * 1000)
	}
	return info
}

// cpuMemory is what readMachineInfo takes from core/node/machine's capacity.
type cpuMemory struct {
	cpuMillis, memoryBytes int64
	hugePages              map[v1.ResourceName]int64
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
