package devices

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/internal/atomicfile"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// The checkpoint has upstream's shape (pkg/kubelet/cm/devicemanager/
// checkpoint): {"Data": {...}, "Checksum": N}, the checksum an FNV-32a
// hash as upstream's checkpoint manager computes. Upstream hashes a dump
// of its Go values; this hashes Data's JSON as written, so that renaming a
// Go type cannot invalidate a checkpoint.

// checkpointData is what the checkpoint holds.
type checkpointData struct {
	PodDeviceEntries []podDevicesEntry
	// RegisteredDevices are the healthy devices of each resource.
	RegisteredDevices map[string][]string
	// ResourcePlugins name the devices plugin of each resource, so that
	// after a restart pods asking for it wait for that plugin (microlet's
	// addition).
	ResourcePlugins map[string]string `json:",omitempty"`
}

// podDevicesEntry is one container's devices of one resource. AllocResp is
// the plugin's ContainerAllocateResponse in protobuf form, as upstream
// keeps it; Plugin and PreStartRequired are microlet's additions, so that a
// container can be started again while its plugin has not reported yet.
type podDevicesEntry struct {
	PodUID           string
	ContainerName    string
	ResourceName     string
	DeviceIDs        devicesPerNUMA
	AllocResp        []byte
	Plugin           string `json:",omitempty"`
	PreStartRequired bool   `json:",omitempty"`
}

// checkpointFile is the file's outer shape; Data is kept as written, to
// check the checksum against.
type checkpointFile struct {
	Data     json.RawMessage
	Checksum uint64
}

func checksum(data []byte) uint64 {
	h := fnv.New32a()
	h.Write(data)
	return uint64(h.Sum32())
}

// restore loads the checkpoint. Resources it names have no devices until
// their plugin reports, and lose their capacity if it does not within the
// grace period, as upstream restores them. A checkpoint that cannot be
// trusted is renamed to <file>.corrupt and the manager starts empty.
func (m *Manager) restore() error {
	if err := os.MkdirAll(filepath.Dir(m.checkpoint), 0o750); err != nil {
		return fmt.Errorf("devicemanager: create the checkpoint directory: %w", err)
	}
	raw, err := os.ReadFile(m.checkpoint)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("devicemanager: read the checkpoint: %w", err)
	}
	data, err := decodeCheckpoint(raw)
	var allocations podAllocations
	if err == nil {
		allocations, err = data.allocations()
	}
	if err != nil {
		aside := m.checkpoint + ".corrupt"
		if renameErr := os.Rename(m.checkpoint, aside); renameErr != nil {
			return fmt.Errorf("devicemanager: the checkpoint %s is corrupt (%v) and cannot be set aside: %w", m.checkpoint, err, renameErr)
		}
		m.log.Error("the device checkpoint is corrupt; it is set aside and every pod's devices are allocated again at admission",
			"checkpoint", m.checkpoint, "set_aside_as", aside, "error", err)
		return nil
	}
	m.allocations = allocations
	for uid := range allocations {
		m.restored.Insert(uid)
	}
	now := m.now()
	for name := range data.RegisteredDevices {
		m.resources[name] = &deviceResource{owner: data.ResourcePlugins[name], stoppedAt: now}
	}
	m.log.Info("device allocations restored from the checkpoint", "pods", m.restored.Len(), "resources", len(data.RegisteredDevices))
	m.lastWritten = raw
	return nil
}

// allocations are the checkpoint's entries as the manager keeps them.
func (d *checkpointData) allocations() (podAllocations, error) {
	out := podAllocations{}
	for _, e := range d.PodDeviceEntries {
		if e.PodUID == "" || e.ContainerName == "" || e.ResourceName == "" || len(e.DeviceIDs.ids()) == 0 {
			return nil, fmt.Errorf("an entry lacks its pod, container, resource or devices: %+v", e)
		}
		resp := &devicesv1.ContainerAllocateResponse{}
		if err := proto.Unmarshal(e.AllocResp, resp); err != nil {
			return nil, fmt.Errorf("the allocation of %s to pod %s container %s: %w", e.ResourceName, e.PodUID, e.ContainerName, err)
		}
		owner := e.Plugin
		if owner == "" {
			owner = d.ResourcePlugins[e.ResourceName]
		}
		out.set(types.UID(e.PodUID), e.ContainerName, e.ResourceName, &allocation{owner: owner, preStartRequired: e.PreStartRequired, devices: e.DeviceIDs, response: resp})
	}
	return out, nil
}

// decodeCheckpoint checks the checksum and decodes the data.
func decodeCheckpoint(raw []byte) (*checkpointData, error) {
	var file checkpointFile
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("not a checkpoint: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, file.Data); err != nil {
		return nil, fmt.Errorf("no data: %w", err)
	}
	if sum := checksum(compact.Bytes()); sum != file.Checksum {
		return nil, fmt.Errorf("checksum mismatch: the file says %d, its data hashes to %d", file.Checksum, sum)
	}
	var data checkpointData
	if err := json.Unmarshal(file.Data, &data); err != nil {
		return nil, fmt.Errorf("invalid data: %w", err)
	}
	return &data, nil
}

// writeCheckpoint writes the allocations and the registered devices, if
// they changed, by writing a new file and renaming it over the old one.
// A failure is logged and returned: the file on disk is then stale.
func (m *Manager) writeCheckpoint() error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	raw, err := m.encodeCheckpoint()
	if err == nil && bytes.Equal(raw, m.lastWritten) {
		return nil
	}
	if err == nil {
		err = atomicfile.WriteFile(m.checkpoint, raw, 0o600)
	}
	if err != nil {
		m.log.Error("cannot write the device checkpoint; it is stale until a later write succeeds", "checkpoint", m.checkpoint, "error", err)
		return fmt.Errorf("failed to write checkpoint file %q: %w", CheckpointFile, err)
	}
	m.lastWritten = raw
	return nil
}

// encodeCheckpoint is the checkpoint of the current state, in a stable
// order.
func (m *Manager) encodeCheckpoint() ([]byte, error) {
	m.mu.Lock()
	data := checkpointData{PodDeviceEntries: []podDevicesEntry{}, RegisteredDevices: map[string][]string{}, ResourcePlugins: map[string]string{}}
	for uid, containers := range m.allocations {
		for container, resources := range containers {
			for resource, a := range resources {
				resp, err := proto.MarshalOptions{Deterministic: true}.Marshal(a.response)
				if err != nil {
					m.mu.Unlock()
					return nil, fmt.Errorf("encode the allocation of %s to pod %s container %s: %w", resource, uid, container, err)
				}
				data.PodDeviceEntries = append(data.PodDeviceEntries, podDevicesEntry{PodUID: string(uid), ContainerName: container, ResourceName: resource,
					DeviceIDs: a.devices, AllocResp: resp, Plugin: a.owner, PreStartRequired: a.preStartRequired})
			}
		}
	}
	for name, r := range m.resources {
		data.RegisteredDevices[name] = append([]string{}, r.healthy()...)
		data.ResourcePlugins[name] = r.owner
	}
	m.mu.Unlock()
	slices.SortFunc(data.PodDeviceEntries, func(a, b podDevicesEntry) int {
		return strings.Compare(a.PodUID+"\x00"+a.ContainerName+"\x00"+a.ResourceName, b.PodUID+"\x00"+b.ContainerName+"\x00"+b.ResourceName)
	})
	encoded, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpointFile{Data: encoded, Checksum: checksum(encoded)})
}
