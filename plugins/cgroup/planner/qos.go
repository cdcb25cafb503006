package planner

import (
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// The QoS classes (v1.PodQOSClass).
const (
	Guaranteed = string(nodefacts.Guaranteed)
	Burstable  = string(nodefacts.Burstable)
	BestEffort = string(nodefacts.BestEffort)
)

// PodQOS is the pod's QoS class as upstream GetPodQOS decides it: the class
// the pod already has, if any (it never changes once set), else the class
// its resources give (nodefacts.PodQOS, which the CPU manager uses too).
func PodQOS(pod *typesv1.Pod) string { return string(nodefacts.PodQOS(pod)) }
