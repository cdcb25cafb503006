package podstatus

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/microlet/microlet/core/cluster/apisource"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/status"
)

// target is the API object a node-side status belongs to, as upstream's
// TranslatePodUID: the pod itself when it came from the API server (same
// UID), or the mirror pod of a static pod (its config.mirror annotation
// names the static pod's UID). apiPod is the API's pod of the status's
// namespace/name, nil if there is none.
func target(apiPod *v1.Pod, uid types.UID) (*v1.Pod, bool) {
	switch {
	case apiPod == nil:
		return nil, false
	case apisource.IsMirrorPod(apiPod):
		return apiPod, apiPod.Annotations[podspec.ConfigMirrorAnnotationKey] == string(uid)
	default:
		return apiPod, apiPod.UID == uid
	}
}

// mergeStatus is upstream's mergePodStatus: the node's status with the
// conditions others own kept from the API's (and the claim statuses the
// scheduler owns), DisruptionTarget added only as the pod turns terminal,
// and the phase held back from terminal while containers could still run,
// so that the API never says a pod finished before it did. heldBack says
// the phase was held back: the status must be written again once the
// containers are known stopped.
func mergeStatus(apiStatus, nodeStatus v1.PodStatus, couldHaveRunningContainers bool) (merged v1.PodStatus, heldBack bool) {
	merged = *nodeStatus.DeepCopy()
	conditions := make([]v1.PodCondition, 0, len(apiStatus.Conditions)+len(nodeStatus.Conditions))
	for _, c := range apiStatus.Conditions {
		if !status.IsConditionByKubelet(c.Type) {
			conditions = append(conditions, c)
		}
	}
	toTerminal := !isTerminal(apiStatus.Phase) && isTerminal(nodeStatus.Phase)
	for _, c := range nodeStatus.Conditions {
		switch {
		case status.IsConditionByKubelet(c.Type):
			conditions = append(conditions, c)
		case status.IsConditionSharedByKubelet(c.Type) && toTerminal && !couldHaveRunningContainers:
			conditions = replaceOrAppend(conditions, c)
		}
	}
	merged.Conditions = conditions
	merged.ResourceClaimStatuses = apiStatus.ResourceClaimStatuses
	merged.ExtendedResourceClaimStatus = apiStatus.ExtendedResourceClaimStatus
	if toTerminal && couldHaveRunningContainers {
		merged.Phase, merged.Reason, merged.Message = apiStatus.Phase, apiStatus.Reason, apiStatus.Message
		heldBack = true
	}
	// Terminal phases are final (the API server refuses to leave them too).
	if isTerminal(apiStatus.Phase) && merged.Phase != apiStatus.Phase {
		merged.Phase, merged.Reason, merged.Message = apiStatus.Phase, apiStatus.Reason, apiStatus.Message
	}
	return merged, heldBack
}

func replaceOrAppend(conditions []v1.PodCondition, c v1.PodCondition) []v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == c.Type {
			conditions[i] = c
			return conditions
		}
	}
	return append(conditions, c)
}

func isTerminal(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// statusPatch is upstream's preparePatchBytesForPodStatus: a strategic
// merge patch from the API's status to the merged one, carrying the pod's
// UID so the API server refuses it for a pod recreated under the same
// name. unchanged says the patch would change nothing.
func statusPatch(uid types.UID, apiStatus, merged v1.PodStatus) (patch []byte, unchanged bool, err error) {
	oldData, err := json.Marshal(v1.Pod{Status: apiStatus})
	if err != nil {
		return nil, false, err
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: merged})
	if err != nil {
		return nil, false, err
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("status patch: %w", err)
	}
	return patch, bytes.Equal(patch, fmt.Appendf(nil, `{"metadata":{"uid":%q}}`, uid)), nil
}

// canBeDeleted is upstream's: a pod being deleted whose end the API has
// seen (terminal phase) and that has finished on the node may now leave the
// API for good. A pod the node never ran (refused at admission) has nothing
// to finish. Mirror pods are the mirror pod manager's to delete.
func canBeDeleted(apiPod *v1.Pod, podIsFinished, couldHaveRunningContainers bool) bool {
	if apiPod.DeletionTimestamp == nil || apisource.IsMirrorPod(apiPod) || !isTerminal(apiPod.Status.Phase) {
		return false
	}
	return podIsFinished || !couldHaveRunningContainers
}
