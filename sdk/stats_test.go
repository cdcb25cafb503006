package sdk_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// statsProvider answers with its node and pods, or with err.
type statsProvider struct {
	configurable
	node *typesv1.NodeStats
	pods []string
	err  error
}

func (s statsProvider) GetSummary(context.Context, *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	var pods []*typesv1.PodStats
	for _, name := range s.pods {
		pods = append(pods, &typesv1.PodStats{PodRef: &typesv1.PodReference{Name: name}})
	}
	return s.node, pods, s.err
}

// summary gathers one GetSummary stream as "node:<name>" and pod names.
func summary(t *testing.T, h *sdktest.Harness) ([]string, error) {
	t.Helper()
	stream, err := h.Stats().GetSummary(t.Context(), &statsv1.GetSummaryRequest{Fresh: true})
	if err != nil {
		t.Fatalf("GetSummary: %v", err)
	}
	var items []string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return items, nil
		}
		if err != nil {
			return items, err
		}
		if node := resp.GetNode(); node != nil {
			items = append(items, "node:"+node.GetNodeName())
		} else {
			items = append(items, resp.GetPod().GetPodRef().GetName())
		}
	}
}

func TestStatsNodeFirstThenPods(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindStats), statsProvider{node: &typesv1.NodeStats{NodeName: "n1"}, pods: []string{"a", "b"}})
	mustConfigure(t, h)
	got, err := summary(t, h)
	if want := []string{"node:n1", "a", "b"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("GetSummary = %v, %v; want %v", got, err, want)
	}
}

func TestStatsErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		p    statsProvider
		want codes.Code
	}{
		{"no node stats", statsProvider{pods: []string{"a"}}, codes.Internal},
		{"retryable", statsProvider{err: sdk.Retryable("cgroupfs is busy")}, codes.Unavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := sdktest.InProcess(t, info(sdk.KindStats), c.p)
			mustConfigure(t, h)
			got, err := summary(t, h)
			wantCode(t, "GetSummary", err, c.want)
			if len(got) != 0 {
				t.Errorf("GetSummary sent %v before failing", got)
			}
		})
	}
}
