package evictionengine

import (
	"fmt"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Local ephemeral storage limits (LocalStorageCapacityIsolation, on by
// default upstream): a pod that outgrows a limit it set itself is evicted at
// once, before any threshold is looked at. Signal names and messages are
// upstream's.
const (
	SignalEmptyDirFsLimit               = "emptydirfs.limit"
	SignalEphemeralPodFsLimit           = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit     = "ephemeralcontainerfs.limit"
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// localStorageEvictions lists the pods over one of their own ephemeral
// storage limits (upstream localStorageEviction), each for the first limit
// it breaks: an emptyDir's sizeLimit, the pod's total limit, a container's
// limit. Pods without stats are skipped: nothing shows them over.
func localStorageEvictions(candidates []*typesv1.Pod, stats map[string]*typesv1.PodStats, dedicatedImageFs bool) []*evictionv1.Eviction {
	var out []*evictionv1.Eviction
	for _, pod := range candidates {
		ps := stats[pod.GetUid()]
		if ps == nil {
			continue
		}
		signal, message := storageLimitBroken(pod, ps, dedicatedImageFs)
		if signal == "" {
			continue
		}
		out = append(out, &evictionv1.Eviction{
			PodUid:             pod.GetUid(),
			GracePeriodSeconds: immediateEvictionGracePeriodSeconds,
			Signal:             signal,
			Message:            message,
		})
	}
	return out
}

// storageLimitBroken returns the signal and message of the first limit the
// pod breaks, or "" when it breaks none.
func storageLimitBroken(pod *typesv1.Pod, ps *typesv1.PodStats, dedicatedImageFs bool) (string, string) {
	for _, v := range pod.GetVolumes() {
		if v.GetType() != "emptyDir" || v.GetSizeLimitBytes() <= 0 {
			continue
		}
		for _, vs := range ps.GetVolumeStats() {
			if vs.GetName() == v.GetName() && clampInt64(vs.GetFs().GetUsedBytes()) > v.GetSizeLimitBytes() {
				return SignalEmptyDirFsLimit, fmt.Sprintf(emptyDirMessageFmt, v.GetName(), formatBinarySI(v.GetSizeLimitBytes()))
			}
		}
	}

	if limit, found := podAggregate(pod, limitsOf, ephemeralStorageField); found {
		if clampInt64(ps.GetEphemeralStorage().GetUsedBytes()) > limit {
			return SignalEphemeralPodFsLimit, fmt.Sprintf(podEphemeralStorageMessageFmt, formatBinarySI(limit))
		}
	}

	for _, c := range pod.GetContainers() {
		limit, ok := lookup(ephemeralStorageField(c.GetResources().GetLimits()))
		if !ok || limit == 0 {
			continue
		}
		for _, cs := range ps.GetContainers() {
			if cs.GetName() != c.GetName() {
				continue
			}
			// With a dedicated imagefs the writable layer is not on nodefs,
			// and upstream counts only the logs.
			used := clampInt64(cs.GetLogs().GetUsedBytes())
			if !dedicatedImageFs {
				used += clampInt64(cs.GetRootfs().GetUsedBytes())
			}
			if used > limit {
				return SignalEphemeralContainerFsLimit, fmt.Sprintf(containerEphemeralStorageMessageFmt, c.GetName(), formatBinarySI(limit))
			}
		}
	}
	return "", ""
}
