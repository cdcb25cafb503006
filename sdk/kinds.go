package sdk

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// The plugin kinds this SDK serves. A kind is a string on the wire, so a
// later SDK and core can add kinds without changing the base protocol.
const (
	KindEviction = "eviction"
	KindImageGC  = "imagegc"
	KindProbes   = "probes"
	KindCgroup   = "cgroup"
	KindDevices  = "devices"
	KindStats    = "stats"
)

// kind is how the SDK serves one plugin kind.
type kind struct {
	apiVersions []string
	// adapt checks that impl implements the kind's interface and returns
	// how to register its service and which optional capabilities it offers.
	adapt func(impl any) (register func(grpc.ServiceRegistrar), capabilities []string, err error)
}

var kinds = map[string]kind{
	KindEviction: {apiVersions: []string{"v1"}, adapt: adaptEviction},
	KindImageGC:  {apiVersions: []string{"v1"}, adapt: adaptImageGC},
	KindProbes:   {apiVersions: []string{"v1"}, adapt: adaptProbes},
	KindCgroup:   {apiVersions: []string{"v1"}, adapt: adaptCgroup},
	KindDevices:  {apiVersions: []string{"v1"}, adapt: adaptDevices},
	KindStats:    {apiVersions: []string{"v1"}, adapt: adaptStats},
}

// KnownKinds lists the kinds this SDK serves.
func KnownKinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mustImplement returns impl as T, or an error naming what is missing.
func mustImplement[T any](impl any, what string) (T, error) {
	t, ok := impl.(T)
	if !ok {
		return t, fmt.Errorf("does not implement %s", what)
	}
	return t, nil
}

// capabilityIf returns []string{name} when impl implements T.
func capabilityIf[T any](impl any, name string) []string {
	if _, ok := impl.(T); ok {
		return []string{name}
	}
	return nil
}

// call keeps a plugin method's error a gRPC status.
func call[Resp any](resp *Resp, err error) (*Resp, error) {
	if err != nil {
		return nil, asStatus(err, codes.Unknown)
	}
	return resp, nil
}

// streamError keeps the error a plugin's stream method returned a gRPC
// status; nil stays nil.
func streamError(err error) error {
	if err == nil {
		return nil
	}
	return asStatus(err, codes.Unknown)
}

// recvEach hands every message of a client stream to each, until the
// client closes the stream or each fails.
func recvEach[Req any](recv func() (*Req, error), each func(*Req) error) error {
	for {
		req, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(req); err != nil {
			return err
		}
	}
}

// unsupported is the answer of an optional method the plugin lacks.
func unsupported(what string) error {
	return Unsupported("this plugin does not implement %s", what)
}
