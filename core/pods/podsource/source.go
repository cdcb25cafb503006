// Package podsource holds the sources of the pods a node runs: the static
// pod path (file), the static pod URL (http) and a local push endpoint
// (push). Each source sends the pods it holds to a channel; podconfig merges
// the sources into one stream for the syncLoop.
//
// Every pod a source sends is decoded, defaulted, given its static identity
// and validated by podspec; a manifest that fails never reaches the
// channel.
package podsource

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Source names. They are also the kubernetes.io/config.source annotation of
// the source's pods: "file", "http" and "api" are upstream's; upstream has
// no push source, and its pods say "push". The API server's source lives in
// core/cluster/apisource.
const (
	FileSource      = "file"
	HTTPSource      = "http"
	PushSource      = "push"
	APIServerSource = "api"
)

// Op says how an Update changes its source's pods.
type Op int

const (
	// OpSet carries the full set of the source's pods: any pod not in it is
	// gone. The first OpSet also tells podconfig the source has been read.
	OpSet Op = iota
	// OpAdd carries pods the source gained.
	OpAdd
	// OpUpdate carries pods of the source that changed.
	OpUpdate
	// OpRemove carries pods the source lost.
	OpRemove
)

func (o Op) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpAdd:
		return "ADD"
	case OpUpdate:
		return "UPDATE"
	case OpRemove:
		return "REMOVE"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Update is a change to one source's pods. The receiver owns the pods.
type Update struct {
	Source string
	Op     Op
	Pods   []*v1.Pod
}

// Source is a source of pods.
type Source interface {
	// Name is the source's name, unique among the node's sources.
	Name() string
	// Run sends the source's pods to out until ctx ends, then returns.
	Run(ctx context.Context, out chan<- Update)
}

// send delivers u unless ctx ends first; it reports whether it delivered.
func send(ctx context.Context, out chan<- Update, u Update) bool {
	select {
	case out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}
