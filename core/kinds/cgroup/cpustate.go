package cgroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"k8s.io/utils/cpuset"
)

// cpuStateFile is the kubelet's CPU manager checkpoint, in its root dir.
const cpuStateFile = "cpu_manager_state"

// CPUManagerCheckpoint is the kubelet's state file (pkg/kubelet/cm/
// cpumanager/state, v2). The type and field names matter: the checksum is
// an FNV-32a hash of a dump of this value, as upstream's checkpoint
// manager computes it, so that either agent reads the other's file.
type CPUManagerCheckpoint struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      Checksum                     `json:"checksum"`
}

// sum is upstream's checksum.New of the checkpoint with Checksum 0.
func (cp CPUManagerCheckpoint) sum() Checksum {
	cp.Checksum = 0
	return kubeletChecksum(&cp, "CPUManagerCheckpoint")
}

// cpuState is what the CPU manager keeps: the policy's name and the
// exclusive CPUs of each container by pod UID and container name.
type cpuState struct {
	policy string
	// shared is the shared pool (the checkpoint's defaultCpuSet).
	shared   cpuset.CPUSet
	assigned map[string]map[string]cpuset.CPUSet
}

// exclusive is every CPU some container has for itself.
func (s *cpuState) exclusive() cpuset.CPUSet {
	all := cpuset.New()
	for _, containers := range s.assigned {
		for _, set := range containers {
			all = all.Union(set)
		}
	}
	return all
}

// loadCPUState reads the state file; none is an empty state. A file that
// fails its checksum or does not parse is an error: handing out CPUs
// without knowing which are taken could hand one out twice, so the
// operator decides (upstream refuses to start likewise).
func loadCPUState(path string) (*cpuState, error) {
	s := &cpuState{assigned: map[string]map[string]cpuset.CPUSet{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	} else if err != nil {
		return nil, fmt.Errorf("read the CPU manager state: %w", err)
	}
	// Entries starts empty, not nil, as upstream's: the file leaves an
	// empty map out, and the checksum was taken of an empty one.
	cp := CPUManagerCheckpoint{Entries: map[string]map[string]string{}}
	if err := json.Unmarshal(raw, &cp); err != nil {
		return nil, fmt.Errorf("the CPU manager state %s does not parse (%v); drain the node and remove it", path, err)
	}
	if cp.Checksum != 0 && cp.Checksum != cp.sum() {
		return nil, fmt.Errorf("the CPU manager state %s fails its checksum; drain the node and remove it", path)
	}
	s.policy = cp.PolicyName
	if s.shared, err = cpuset.Parse(cp.DefaultCPUSet); err != nil {
		return nil, fmt.Errorf("the CPU manager state %s: defaultCpuSet: %w", path, err)
	}
	for pod, containers := range cp.Entries {
		for name, text := range containers {
			set, err := cpuset.Parse(text)
			if err != nil {
				return nil, fmt.Errorf("the CPU manager state %s: %s/%s: %w", path, pod, name, err)
			}
			s.set(pod, name, set)
		}
	}
	return s, nil
}

func (s *cpuState) set(pod, container string, set cpuset.CPUSet) {
	if s.assigned[pod] == nil {
		s.assigned[pod] = map[string]cpuset.CPUSet{}
	}
	s.assigned[pod][container] = set
}

// save writes the state file.
func (s *cpuState) save(path string) error {
	cp := CPUManagerCheckpoint{PolicyName: s.policy, DefaultCPUSet: s.shared.String(), Entries: map[string]map[string]string{}}
	for pod, containers := range s.assigned {
		cp.Entries[pod] = map[string]string{}
		for name, set := range containers {
			cp.Entries[pod][name] = set.String()
		}
	}
	cp.Checksum = cp.sum()
	return writeCheckpoint(path, cp)
}
