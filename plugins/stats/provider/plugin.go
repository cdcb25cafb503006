package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/microlet/microlet/plugins/stats/collect"
	"github.com/microlet/microlet/plugins/stats/summary"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// Plugin serves GetSummary through the SDK. It implements
// sdk.Plugin[Config], sdk.StatsProvider and sdk.Shutdowner.
type Plugin struct {
	// measuring serializes measurements: requests that arrive during one
	// wait for it and take its answer unless they want fresher stats.
	measuring sync.Mutex
	sampler   *sampler
	rates     *summary.CPURates

	mu     sync.Mutex
	maxAge time.Duration
	// answers are the last summaries, full [0] and cpu-and-memory [1].
	answers [2]*answer
}

// answer is one assembled summary.
type answer struct {
	at   time.Time
	node *typesv1.NodeStats
	pods []*typesv1.PodStats
}

// Configure opens the node's procfs and cgroup tree. The plugin needs the
// core's host service: pods and the runtime's stats come from there.
func (p *Plugin) Configure(_ context.Context, cfg *Config, host *sdk.Host) error {
	if host == nil {
		return errors.New("the stats plugin needs the core's host service (pods, runtime stats), and the core offered none")
	}
	proc, err := collect.OpenProc(cfg.ProcFS)
	if err != nil {
		return fmt.Errorf("procfs: %w", err)
	}
	cgroups, err := collect.OpenCgroups(cfg.CgroupFS)
	if err != nil {
		return fmt.Errorf("cgroupfs: %w", err)
	}
	bootTime, err := proc.BootTime()
	if err != nil {
		return fmt.Errorf("procfs: boot time: %w", err)
	}
	log := sdk.Log()
	log.Debug("measuring", "procfs", cfg.ProcFS, "cgroupfs", cfg.CgroupFS, "cgroup_version", cgroups.Version())
	p.measuring.Lock()
	defer p.measuring.Unlock()
	p.sampler = &sampler{
		cfg:       *cfg,
		host:      host,
		nodeName:  host.NodeName,
		proc:      proc,
		cgroups:   cgroups,
		diskUsage: collect.NewDiskUsageCache(cfg.DiskUsagePeriod.Duration, log),
		bootTime:  bootTime,
		log:       log,
	}
	p.rates = summary.NewCPURates()
	p.mu.Lock()
	p.maxAge = cfg.MaxAge.Duration
	p.mu.Unlock()
	return nil
}

// GetSummary answers from the last summary of the same kind when it is at
// most max_age old and the request does not ask for fresh stats, and
// measures otherwise.
func (p *Plugin) GetSummary(ctx context.Context, req *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	kind := 0
	if req.GetOnlyCpuAndMemory() {
		kind = 1
	}
	if a := p.recent(kind); a != nil && !req.GetFresh() {
		return a.node, a.pods, nil
	}
	p.measuring.Lock()
	defer p.measuring.Unlock()
	if a := p.recent(kind); a != nil && !req.GetFresh() {
		return a.node, a.pods, nil
	}
	sample, err := p.sampler.sample(ctx, req.GetOnlyCpuAndMemory())
	if err != nil {
		return nil, nil, err
	}
	node, pods := summary.Build(sample, p.rates)
	p.mu.Lock()
	p.answers[kind] = &answer{at: sample.Time, node: node, pods: pods}
	p.mu.Unlock()
	return node, pods, nil
}

// recent is the last answer of kind if it is at most max_age old.
func (p *Plugin) recent(kind int) *answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a := p.answers[kind]; a != nil && time.Since(a.at) <= p.maxAge {
		return a
	}
	return nil
}

// Shutdown stops the disk usage walker.
func (p *Plugin) Shutdown(context.Context) error {
	p.measuring.Lock()
	defer p.measuring.Unlock()
	if p.sampler != nil {
		p.sampler.diskUsage.Close()
	}
	return nil
}
