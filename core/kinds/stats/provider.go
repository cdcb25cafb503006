// Package stats is the core's side of the stats plugin: it asks the plugin
// for summaries, converts them to the kubelet's Summary API
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1), and serves /stats/summary and
// the Prometheus resource metrics (/metrics/resource) as the kubelet does.
//
// Without a serving stats plugin there are no stats: Sample and Summary
// fail with an error wrapping pluginhost.ErrUnavailable (the eviction
// manager skips its cycle), /stats/summary answers 503 and
// /metrics/resource reports resource_scrape_error 1 (docs/stats.md).
package stats

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/microlet/microlet/core/pluginhost"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Provider asks the stats plugin for summaries.
type Provider struct {
	source Source
	log    hclog.Logger
}

// New returns a provider over source. log receives the handlers' errors;
// nil discards them.
func New(source Source, log hclog.Logger) *Provider {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Provider{source: source, log: log}
}

// Sample is one summary as the plugin sent it (microlet.types.v1), for
// callers that hand stats on to another plugin (the eviction strategy).
type Sample struct {
	Node *typesv1.NodeStats
	Pods []*typesv1.PodStats
}

// Sample asks for a full summary. fresh asks the plugin to measure now
// rather than answer from its last measurement, as an eviction decision
// needs.
func (p *Provider) Sample(ctx context.Context, fresh bool) (*Sample, error) {
	return p.get(ctx, &statsv1.GetSummaryRequest{Fresh: fresh})
}

// CadvisorSample is a full summary with the counters only
// /metrics/cadvisor exports (CFS periods, block I/O, page cache), from the
// plugin's last such measurement when it is recent.
func (p *Provider) CadvisorSample(ctx context.Context) (*Sample, error) {
	return p.get(ctx, &statsv1.GetSummaryRequest{CadvisorCounters: true})
}

// Summary is Sample in the kubelet's Summary API.
func (p *Provider) Summary(ctx context.Context, fresh bool) (*statsapi.Summary, error) {
	s, err := p.Sample(ctx, fresh)
	if err != nil {
		return nil, err
	}
	return toSummary(s), nil
}

// cpuAndMemory is the summary of /stats/summary?only_cpu_and_memory=true
// and of the resource metrics, from the plugin's last measurement.
func (p *Provider) cpuAndMemory(ctx context.Context) (*statsapi.Summary, error) {
	s, err := p.get(ctx, &statsv1.GetSummaryRequest{OnlyCpuAndMemory: true})
	if err != nil {
		return nil, err
	}
	out := toSummary(s)
	onlyCPUAndMemory(out)
	return out, nil
}

// get runs one GetSummary: the node's stats first, then one message per pod.
func (p *Provider) get(ctx context.Context, req *statsv1.GetSummaryRequest) (*Sample, error) {
	return pluginhost.Ask(ctx, p.source, "stats plugin GetSummary", func(ctx context.Context, c pluginhost.Conn[statsv1.StatsServiceClient]) (*Sample, error) {
		stream, err := c.Client.GetSummary(ctx, req)
		if err != nil {
			return nil, err
		}
		return receive(stream)
	})
}

func receive(stream grpc.ServerStreamingClient[statsv1.GetSummaryResponse]) (*Sample, error) {
	out := &Sample{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if out.Node == nil {
				return nil, errors.New("the plugin sent no node stats")
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch item := resp.GetItem().(type) {
		case *statsv1.GetSummaryResponse_Node:
			if out.Node != nil || len(out.Pods) > 0 {
				return nil, errors.New("the plugin sent node stats after the first message; the node comes first, once")
			}
			out.Node = item.Node
		case *statsv1.GetSummaryResponse_Pod:
			if out.Node == nil {
				return nil, errors.New("the plugin sent pod stats before the node's; the node comes first")
			}
			out.Pods = append(out.Pods, item.Pod)
		default:
			return nil, fmt.Errorf("the plugin sent a message with neither node nor pod stats (%T)", item)
		}
	}
}
