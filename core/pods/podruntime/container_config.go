package podruntime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/microlet/microlet/core/pods/podspec"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerInstance is what makes one instance of a container besides the
// pod's spec.
type containerInstance struct {
	spec *v1.Container
	// restartCount is the instance's restart count and CRI attempt.
	restartCount int
	// imageRef is the image the runtime resolved; user who it runs as.
	imageRef string
	user     imageUser
	podIPs   []string
	plan     *ResourcePlan
	// targetID is the container whose process namespace an ephemeral
	// container joins; "" for none.
	targetID string
}

// containerConfig is the CreateContainer configuration of a container
// instance, as upstream's generateContainerConfig together with the
// kubelet's GenerateRunContainerOptions. Every error is a configuration
// error (CreateContainerConfigError): the spec or the node's state does not
// allow the container.
func (m *Manager) containerConfig(ctx context.Context, pod *v1.Pod, in containerInstance) (*runtimeapi.ContainerConfig, error) {
	c := in.spec
	opts := &ContainerOptions{}
	if m.opts.ContainerOptions != nil {
		o, err := m.opts.ContainerOptions.ContainerOptions(ctx, pod, c)
		if err != nil {
			return nil, fmt.Errorf("device allocation: %w", err)
		}
		if o != nil {
			opts = o
		}
	}
	serviceEnv, err := m.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	env, err := containerEnv(ctx, pod, c, envContext{
		nodeName:    m.opts.NodeName,
		nodeIPs:     m.nodeIPs,
		podIPs:      in.podIPs,
		allocatable: m.opts.NodeAllocatable(),
		deviceEnvs:  opts.Envs,
		sources:     m.opts.VolumeSources,
		serviceEnv:  serviceEnv,
	})
	if err != nil {
		return nil, err
	}
	vars := envMap(env)
	mounts, err := m.containerMounts(pod, c, in.podIPs, vars)
	if err != nil {
		return nil, err
	}
	mounts = append(append([]*runtimeapi.Mount{}, opts.Mounts...), mounts...)

	logDir := filepath.Join(m.podLogsDir(pod.Namespace, pod.Name, pod.UID), c.Name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create container log directory for container %s failed: %w", c.Name, err)
	}
	security, err := m.containerSecurityContext(pod, c, in.user)
	if err != nil {
		return nil, err
	}
	// A debugging container sees its target's processes, unless the pod
	// already shares one namespace (hostPID, shareProcessNamespace).
	if in.targetID != "" && security.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		security.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		security.NamespaceOptions.TargetId = in.targetID
	}
	annotations, err := newContainerAnnotations(c, pod, in.restartCount, opts.Annotations)
	if err != nil {
		return nil, err
	}
	lookup := podspec.MapLookup(vars)
	config := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: in.imageRef, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Labels:      newContainerLabels(c, pod),
		Annotations: annotations,
		Devices:     opts.Devices,
		CDIDevices:  opts.CDIDevices,
		Mounts:      mounts,
		LogPath:     containerLogPath(c.Name, in.restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       &runtimeapi.LinuxContainerConfig{SecurityContext: security},
	}
	if in.plan != nil {
		config.Linux.Resources = in.plan.Containers[c.Name]
	}
	for _, e := range env {
		config.Envs = append(config.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: e.Value})
	}
	return config, nil
}

// containerMounts are the container's volume mounts, the pod's hosts file
// unless the container mounts its own, and the termination message file.
func (m *Manager) containerMounts(pod *v1.Pod, c *v1.Container, podIPs []string, envs map[string]string) ([]*runtimeapi.Mount, error) {
	mounts, err := m.volumes.containerMounts(pod, c, envs)
	if err != nil {
		return nil, err
	}
	mountHosts := shouldMountHostsFile(pod, podIPs)
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == etcHostsPath {
			mountHosts = false
		}
	}
	if mountHosts {
		hostname, domain, err := podHostnameAndDomain(pod, m.opts.DNS.ClusterDomain)
		if err != nil {
			return nil, err
		}
		hosts, err := m.hostsMount(pod, podIPs, hostname, domain)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, hosts)
	}
	if c.TerminationMessagePath != "" {
		// As upstream, a container whose message file cannot be made runs
		// without one rather than not at all.
		if path, err := m.newTerminationMessageFile(pod, c); err != nil {
			m.log.Warn("cannot create the termination message file; the container runs without one",
				"pod", podFullName(pod), "container", c.Name, "error", err)
		} else {
			mounts = append(mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: path})
		}
	}
	return mounts, nil
}

// newTerminationMessageFile makes an empty, world-writable file for one
// container instance's termination message, under a random name so that
// instances do not share one.
func (m *Manager) newTerminationMessageFile(pod *v1.Pod, c *v1.Container) (string, error) {
	dir := m.podContainerDir(pod.UID, c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	path := filepath.Join(dir, hex.EncodeToString(id[:]))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	// The container may run as any user; the umask must not stop it.
	return path, os.Chmod(path, 0o666)
}

func expandAll(items []string, lookup func(string) (string, bool)) []string {
	if len(items) == 0 {
		return nil
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = podspec.Expand(s, lookup)
	}
	return out
}
