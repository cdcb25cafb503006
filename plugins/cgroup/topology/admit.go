package topology

import (
	"errors"
	"fmt"
	"slices"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Admission reasons as upstream's (topologymanager, cm/admission).
const (
	ReasonTopologyAffinityError    = "TopologyAffinityError"
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// Provider is one resource manager as the topology manager sees it
// (upstream HintProvider).
type Provider interface {
	// ContainerHints and PodHints are the provider's hints for one
	// container, or for the whole pod (scope pod).
	ContainerHints(c *typesv1.Container) Hints
	PodHints() Hints
	// Allocate gives the container its resources within the chosen hint.
	Allocate(c *typesv1.Container, hint Hint) error
}

// AdmitError refuses a pod with the kubelet's reason and message.
type AdmitError struct{ Reason, Message string }

func (e *AdmitError) Error() string { return e.Message }

// errAffinity is upstream's TopologyAffinityError.
var errAffinity = &AdmitError{Reason: ReasonTopologyAffinityError, Message: "Resources cannot be allocated with Topology locality"}

// Admit aligns and allocates a pod's resources as the kubelet's topology
// manager admits it: under the container scope each container (init
// containers first) gets the merge of the providers' hints for it, under
// the pod scope every container gets the merge of the hints for the whole
// pod; a merge the policy does not admit refuses the pod
// (TopologyAffinityError), and each provider then allocates within the
// hint. Under the none policy providers allocate without hints. An
// allocation's error refuses the pod: an *AdmitError as it is, any other
// as upstream's UnexpectedAdmissionError.
func (p *Policy) Admit(pod *typesv1.Pod, nodes []int, providers []Provider) error {
	containers := slices.Concat(pod.GetInitContainers(), pod.GetContainers())
	if p.Name == PolicyNone {
		for _, c := range containers {
			if err := allocate(providers, c, Hint{}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(nodes) > maxNUMANodes {
		return &AdmitError{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("the topology manager is unsupported on machines with more than %d NUMA nodes", maxNUMANodes)}
	}
	if p.Scope == ScopePod {
		var hints []Hints
		for _, pr := range providers {
			hints = append(hints, pr.PodHints())
		}
		best, ok := p.Merge(nodes, hints)
		if !ok {
			return errAffinity
		}
		for _, c := range containers {
			if err := allocate(providers, c, best); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range containers {
		var hints []Hints
		for _, pr := range providers {
			hints = append(hints, pr.ContainerHints(c))
		}
		best, ok := p.Merge(nodes, hints)
		if !ok {
			return errAffinity
		}
		if err := allocate(providers, c, best); err != nil {
			return err
		}
	}
	return nil
}

func allocate(providers []Provider, c *typesv1.Container, hint Hint) error {
	for _, pr := range providers {
		if err := pr.Allocate(c, hint); err != nil {
			var admit *AdmitError
			if errors.As(err, &admit) {
				return admit
			}
			return &AdmitError{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
		}
	}
	return nil
}
