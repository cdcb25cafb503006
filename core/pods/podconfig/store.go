package podconfig

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/podspec"
)

// offeredPod is a pod a source currently holds.
type offeredPod struct {
	pod *v1.Pod
	// seq orders pods by when the source first offered them: among pods
	// with the same name, the earliest wins.
	seq uint64
	// rejected says why the node does not run the pod; empty when it does.
	rejected string
}

// sourceState is what one source holds and what of it the syncLoop has.
type sourceState struct {
	// seen: the source has sent its full set at least once.
	seen     bool
	offered  map[types.UID]*offeredPod
	accepted map[types.UID]*v1.Pod
}

// owner is the source and pod that hold a namespace/name on the node.
type owner struct {
	source string
	uid    types.UID
}

// store merges source updates into incremental pod updates, as upstream's
// podStorage does, and in addition keeps one pod per namespace/name across
// sources: the first to provide a name owns it until its pod is gone.
type store struct {
	log     hclog.Logger
	now     func() time.Time
	sources map[string]*sourceState
	owners  map[string]owner
	seq     uint64
}

func newStore(log hclog.Logger, now func() time.Time, names []string) *store {
	s := &store{log: log, now: now, sources: map[string]*sourceState{}, owners: map[string]owner{}}
	for _, name := range names {
		s.sources[name] = &sourceState{offered: map[types.UID]*offeredPod{}, accepted: map[types.UID]*v1.Pod{}}
	}
	return s
}

// changes are the pod updates one admission yields.
type changes struct {
	adds, updates, deletes, removes, reconciles []*v1.Pod
}

// merge applies one source update and returns the pod updates for the
// syncLoop, in upstream's order: REMOVE, ADD, UPDATE, DELETE, RECONCILE;
// then ADDs of other sources' pods that were waiting for a name this update
// freed.
func (s *store) merge(u podsource.Update) []PodUpdate {
	src := s.sources[u.Source]
	firstSet := u.Op == podsource.OpSet && !src.seen
	incoming := make([]*v1.Pod, len(u.Pods))
	for i, pod := range u.Pods {
		incoming[i] = pod.DeepCopy() // the store mutates what it keeps
		if incoming[i].Annotations == nil {
			incoming[i].Annotations = map[string]string{}
		}
		incoming[i].Annotations[podspec.ConfigSourceAnnotationKey] = u.Source
	}
	switch u.Op {
	case podsource.OpSet:
		src.seen = true
		previous := src.offered
		src.offered = make(map[types.UID]*offeredPod, len(incoming))
		for _, pod := range incoming {
			s.offer(src, previous, pod)
		}
	case podsource.OpAdd, podsource.OpUpdate:
		for _, pod := range incoming {
			s.offer(src, src.offered, pod)
		}
	case podsource.OpRemove:
		for _, pod := range incoming {
			delete(src.offered, pod.UID)
		}
	default:
		s.log.Error("ignoring an update with an unknown operation", "source", u.Source, "op", u.Op)
		return nil
	}

	ch, released := s.admit(u.Source)
	out := ch.podUpdates(u.Source, firstSet)
	if len(released) == 0 {
		return out
	}
	for _, other := range s.sourceNames() {
		if other != u.Source && s.waitsFor(other, released) {
			more, _ := s.admit(other)
			out = append(out, more.podUpdates(other, false)...)
		}
	}
	return out
}

// offer records a pod the source holds, keeping its place in line if it was
// offered before.
func (s *store) offer(src *sourceState, previous map[types.UID]*offeredPod, pod *v1.Pod) {
	if p, ok := previous[pod.UID]; ok {
		src.offered[pod.UID] = &offeredPod{pod: pod, seq: p.seq, rejected: p.rejected}
		return
	}
	s.seq++
	src.offered[pod.UID] = &offeredPod{pod: pod, seq: s.seq}
}

// admit decides which of a source's pods the node runs and what changed for
// the syncLoop. It returns the names the source no longer holds.
func (s *store) admit(name string) (ch changes, released []string) {
	src := s.sources[name]
	for fullName, o := range s.owners {
		if o.source == name {
			delete(s.owners, fullName)
		}
	}
	accepted := make(map[types.UID]*v1.Pod, len(src.offered))
	for _, o := range s.inLine(src) {
		fullName := podFullName(o.pod)
		reason := ""
		if holder, taken := s.owners[fullName]; taken {
			reason = s.conflict(fullName, holder, name)
		}
		if reason != o.rejected && reason != "" {
			s.log.Warn("pod rejected", "source", name, "pod", fullName, "uid", o.pod.UID, "reason", reason)
		}
		o.rejected = reason
		if reason != "" {
			continue
		}
		s.owners[fullName] = owner{source: name, uid: o.pod.UID}
		ref := o.pod
		existing, known := src.accepted[ref.UID]
		if !known {
			ref.Annotations[podspec.ConfigFirstSeenAnnotationKey] = s.now().Format(time.RFC3339Nano)
			accepted[ref.UID] = ref
			ch.adds = append(ch.adds, ref)
			continue
		}
		accepted[ref.UID] = existing
		switch update, reconcile, gracefulDelete := checkAndUpdatePod(existing, ref); {
		case update:
			ch.updates = append(ch.updates, existing)
		case reconcile:
			ch.reconciles = append(ch.reconciles, existing)
		case gracefulDelete:
			ch.deletes = append(ch.deletes, existing)
		}
	}
	for _, uid := range sortedUIDs(src.accepted) {
		if _, kept := accepted[uid]; kept {
			continue
		}
		gone := src.accepted[uid]
		ch.removes = append(ch.removes, gone)
		if _, reclaimed := s.owners[podFullName(gone)]; !reclaimed {
			released = append(released, podFullName(gone))
		}
	}
	src.accepted = accepted
	return ch, released
}

// inLine returns a source's offered pods in the order they claim names:
// those the node already runs first, then by when they were offered.
func (s *store) inLine(src *sourceState) []*offeredPod {
	line := make([]*offeredPod, 0, len(src.offered))
	for _, o := range src.offered {
		line = append(line, o)
	}
	slices.SortFunc(line, func(a, b *offeredPod) int {
		_, aRuns := src.accepted[a.pod.UID]
		_, bRuns := src.accepted[b.pod.UID]
		if aRuns != bRuns {
			if aRuns {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return line
}

func (s *store) conflict(fullName string, holder owner, claimant string) string {
	if holder.source == claimant {
		return fmt.Sprintf("duplicate pod name %q in source %q: pod %s already has it", fullName, claimant, holder.uid)
	}
	return fmt.Sprintf("pod name %q is already taken by a pod from source %q (UID %s); this pod runs once that one is gone", fullName, holder.source, holder.uid)
}

// waitsFor reports whether a source has a rejected pod with one of names.
func (s *store) waitsFor(source string, names []string) bool {
	for _, o := range s.sources[source].offered {
		if o.rejected != "" && slices.Contains(names, podFullName(o.pod)) {
			return true
		}
	}
	return false
}

func (s *store) sourceNames() []string {
	names := make([]string, 0, len(s.sources))
	for name := range s.sources {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// rejected lists the pods the node does not run, by source and name.
func (s *store) rejected() []RejectedPod {
	var out []RejectedPod
	for _, name := range s.sourceNames() {
		for _, o := range s.sources[name].offered {
			if o.rejected != "" {
				out = append(out, RejectedPod{Source: name, Pod: o.pod.DeepCopy(), Reason: o.rejected})
			}
		}
	}
	slices.SortFunc(out, func(a, b RejectedPod) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(podFullName(a.Pod)+string(a.Pod.UID), podFullName(b.Pod)+string(b.Pod.UID))
	})
	return out
}

// podUpdates turns changes into the syncLoop's updates, in upstream's
// order. The first full set of a source that changes nothing still yields
// an empty ADD: it tells the syncLoop the source has been read.
func (ch changes) podUpdates(source string, firstSet bool) []PodUpdate {
	var out []PodUpdate
	emit := func(op Op, pods []*v1.Pod) {
		if len(pods) > 0 {
			out = append(out, PodUpdate{Op: op, Source: source, Pods: copyPods(pods)})
		}
	}
	emit(OpRemove, ch.removes)
	emit(OpAdd, ch.adds)
	emit(OpUpdate, ch.updates)
	emit(OpDelete, ch.deletes)
	if firstSet && len(ch.adds) == 0 && len(ch.updates) == 0 && len(ch.deletes) == 0 {
		out = append(out, PodUpdate{Op: OpAdd, Source: source, Pods: []*v1.Pod{}})
	}
	emit(OpReconcile, ch.reconciles)
	return out
}

func copyPods(pods []*v1.Pod) []*v1.Pod {
	copies := make([]*v1.Pod, len(pods))
	for i, pod := range pods {
		copies[i] = pod.DeepCopy()
	}
	return copies
}

func sortedUIDs(pods map[types.UID]*v1.Pod) []types.UID {
	uids := make([]types.UID, 0, len(pods))
	for uid := range pods {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return uids
}

// podFullName is the name a pod has on the node: namespace/name.
func podFullName(pod *v1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}
