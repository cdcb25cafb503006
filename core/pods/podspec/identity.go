package podspec

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations the kubelet puts on the pods of its sources, by upstream's
// names (pkg/kubelet/types/pod_update.go). ApplyStaticIdentity sets the
// hash; podconfig sets the source and first-seen time when a pod enters it.
const (
	ConfigHashAnnotationKey      = "kubernetes.io/config.hash"
	ConfigSourceAnnotationKey    = "kubernetes.io/config.source"
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	ConfigMirrorAnnotationKey    = "kubernetes.io/config.mirror"
)

// Origin is where a static pod comes from. Together with the pod's content
// it makes the pod's UID, so the same manifest from the same place gets the
// same UID after a restart, which is how the core finds the pod's running
// containers again.
type Origin struct {
	nodeName types.NodeName
	// seed is hashed after the pod, as upstream's applyDefaults does.
	seed string
	// local pods get the NoExecute toleration upstream gives file pods.
	local bool
}

// FileOrigin is a manifest file of the static pod path.
func FileOrigin(nodeName, path string) Origin {
	return Origin{nodeName: types.NodeName(nodeName), seed: fmt.Sprintf("host:%sfile:%s", nodeName, path), local: true}
}

// URLOrigin is the static pod URL. Upstream leaves the node out of the seed
// of URL pods, so the same URL yields the same UIDs on every node.
func URLOrigin(nodeName, url string) Origin {
	return Origin{nodeName: types.NodeName(nodeName), seed: "url:" + url}
}

// PushOrigin is the push endpoint. Pushed pods are local to the node like
// file pods, so they are seeded and tolerated the same way.
func PushOrigin(nodeName string) Origin {
	return Origin{nodeName: types.NodeName(nodeName), seed: fmt.Sprintf("host:%spush:", nodeName), local: true}
}

// ApplyStaticIdentity gives a static pod its identity on this node, as
// upstream's applyDefaults (pkg/kubelet/config/common.go): a UID hashed from
// the pod and its origin unless it has one, the name suffixed with the
// lowercased node name, namespace "default" when empty, spec.nodeName, the
// config hash annotation, the NoExecute toleration for local pods, and phase
// Pending. Apply it after SetDefaults: the UID covers the defaulted pod.
//
// Upstream hashes its internal Pod type with a reflection printer; this
// hashes the v1 Pod's JSON (what upstream's newer deepHashPod does), so UIDs
// are stable across microlet restarts but not equal to the kubelet's.
func ApplyStaticIdentity(pod *v1.Pod, origin Origin) {
	if pod.UID == "" {
		hasher := md5.New()
		if err := json.NewEncoder(hasher).Encode(pod); err != nil {
			panic(err) // a v1.Pod always encodes
		}
		hasher.Write([]byte(origin.seed))
		pod.UID = types.UID(hex.EncodeToString(hasher.Sum(nil)))
	}
	pod.Name = StaticPodName(pod.Name, string(origin.nodeName))
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = string(origin.nodeName)
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string)
	}
	pod.Annotations[ConfigHashAnnotationKey] = string(pod.UID)
	if origin.local {
		addToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	}
	pod.Status.Phase = v1.PodPending
}

// StaticPodName is the name a static pod runs under on a node, upstream's
// generatePodName: unique among nodes for the pod's mirror in the API.
func StaticPodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// addToleration mirrors helper.AddOrUpdateTolerationInPod: a toleration
// matching on key, operator, value and effect is replaced, else appended.
func addToleration(pod *v1.Pod, t v1.Toleration) {
	for i, existing := range pod.Spec.Tolerations {
		if existing.MatchToleration(&t) {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}
