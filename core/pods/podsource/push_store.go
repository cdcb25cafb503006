package podsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

// pushedPod is one pod of the push source.
type pushedPod struct {
	// key is namespace/name as pushed; a push with the same key replaces it.
	key string
	// raw is the pod as pushed, decoded but not defaulted: what is saved,
	// so that a restart prepares it again to the same pod and UID.
	raw *v1.Pod
	// pod is the pod ready to run.
	pod *v1.Pod
}

// pushedPods are the push source's pods by key.
type pushedPods map[string]*pushedPod

func (p pushedPods) clone() pushedPods {
	c := make(pushedPods, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

// running returns copies of the pods ready to run, by key.
func (p pushedPods) running() []*v1.Pod {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pods := make([]*v1.Pod, len(keys))
	for i, k := range keys {
		pods[i] = p[k].pod.DeepCopy()
	}
	return pods
}

// pushKey is the key of a pod as pushed.
func pushKey(raw *v1.Pod) string {
	namespace := raw.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return namespace + "/" + raw.Name
}

// loadPushedPods reads the pods saved at path. A missing file holds none; a
// saved pod that no longer passes validation (microlet was upgraded) is
// dropped with an error in the log, the others are kept.
func loadPushedPods(path, nodeName string, log hclog.Logger) (pushedPods, error) {
	pods := pushedPods{}
	if path == "" {
		return pods, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pods, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the pushed pods: %w", err)
	}
	m, err := podspec.DecodePodOrList(data)
	if err != nil {
		return nil, fmt.Errorf("the pushed pods saved in %s cannot be read (remove the file to start without them): %w", path, err)
	}
	for i, raw := range m.Pods {
		pod, err := m.Prepare(i, podspec.PushOrigin(nodeName))
		if err != nil {
			log.Error("a saved pushed pod is no longer valid; dropping it", "state", path, "pod", pushKey(raw), "error", err)
			continue
		}
		pods[pushKey(raw)] = &pushedPod{key: pushKey(raw), raw: raw, pod: pod}
	}
	return pods, nil
}

// savePushedPods writes the pods as pushed to path, atomically: a crash
// leaves the old file or the new one, never a torn one.
func savePushedPods(path string, pods pushedPods) error {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		list.Items = append(list.Items, *pods[k].raw)
	}
	data, err := json.Marshal(&list)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("saving the pushed pods: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("saving the pushed pods to %s: %w", path, err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
