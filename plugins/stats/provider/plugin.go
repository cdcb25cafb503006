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
	// measuring serializes measurements, a token held from a measurement's
	// start to its end: requests that arrive during one wait for it and
	// take its answer unless they want fresher stats.
	measuring     chan struct{}
	measuringInit sync.Once
	sampler       *sampler
	rates         *summary.CPURates

	mu     sync.Mutex
	maxAge time.Duration
	// answers are the last summaries, by kind.
	answers [kinds]*answer
}

// kind is what a summary measures.
type kind int

const (
	// full is the kubelet's Summary API.
	full kind = iota
	// cpuAndMemory is /stats/summary?only_cpu_and_memory=true.
	cpuAndMemory
	// cadvisor is full and the cgroups' counters that only
	// /metrics/cadvisor exports: reading them from every container's
	// cgroup doubles a summary's cost, which the eviction manager's
	// summary every 10 s and /stats/summary do not pay.
	cadvisor
	kinds
)

// requestKind is the kind of summary req asks for.
func requestKind(req *statsv1.GetSummaryRequest) kind {
	switch {
	case req.GetOnlyCpuAndMemory():
		return cpuAndMemory
	case req.GetCadvisorCounters():
		return cadvisor
	}
	return full
}

// serving are the kinds of answer that serve a request of kind k: its own,
// and for a full one also a cadvisor one, which holds all of it.
func serving(k kind) []kind {
	if k == full {
		return []kind{full, cadvisor}
	}
	return []kind{k}
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
	p.lock()
	defer p.unlock()
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

// measureTimeout bounds one measurement, which runs to its end whatever
// the request that started it: on a runtime slow to list container stats
// (hundreds of containers stopping) a measurement cut short at each
// request's deadline would never finish, and every request would fail.
const measureTimeout = time.Minute

// GetSummary answers from the last summary that serves the request's kind
// when it is at most max_age old and the request does not ask for fresh
// stats, and measures otherwise. A request whose deadline comes before the
// measurement ends gets the last summary of its kind, however old (its
// timestamps say so), unless it asked for fresh stats; the measurement goes
// on and its summary answers the requests after it.
func (p *Plugin) GetSummary(ctx context.Context, req *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	kind := requestKind(req)
	fresh := req.GetFresh()
	if a := p.recent(kind); a != nil && !fresh {
		return a.node, a.pods, nil
	}
	wait := ctx
	if deadline, ok := ctx.Deadline(); ok && !fresh {
		// Give up early enough for the last summary to reach the caller
		// before its deadline, on a node loaded enough to make measuring
		// slow: half the time left, at most 1 s.
		margin := min(time.Until(deadline)/2, time.Second)
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, deadline.Add(-margin))
		defer cancel()
	}
	select {
	case p.token() <- struct{}{}:
	case <-wait.Done():
		return p.last(kind, fresh, wait.Err())
	}
	if a := p.recent(kind); a != nil && !fresh {
		p.unlock()
		return a.node, a.pods, nil
	}
	done := make(chan error, 1)
	var measured *answer
	go func() {
		defer p.unlock()
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), measureTimeout)
		defer cancel()
		sample, err := p.sampler.sample(mctx, kind)
		if err == nil {
			node, pods := summary.Build(sample, p.rates)
			measured = &answer{at: sample.Time, node: node, pods: pods}
			p.mu.Lock()
			p.answers[kind] = measured
			p.mu.Unlock()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, nil, err
		}
		return measured.node, measured.pods, nil
	case <-wait.Done():
		return p.last(kind, fresh, wait.Err())
	}
}

// last is the newest answer serving kind, however old, for a request that
// did not ask for fresh stats and whose deadline came first; err otherwise.
func (p *Plugin) last(k kind, fresh bool, err error) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	a, _ := p.newest(k)
	if a == nil || fresh {
		return nil, nil, err
	}
	return a.node, a.pods, nil
}

// newest is the newest answer serving kind k (nil before the first) and
// the max_age in force, read together.
func (p *Plugin) newest(k kind) (newest *answer, maxAge time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range serving(k) {
		if a := p.answers[s]; a != nil && (newest == nil || a.at.After(newest.at)) {
			newest = a
		}
	}
	return newest, p.maxAge
}

// token is the measuring token's channel, made on first use so that a
// zero Plugin works.
func (p *Plugin) token() chan struct{} {
	p.measuringInit.Do(func() { p.measuring = make(chan struct{}, 1) })
	return p.measuring
}

// lock takes the measuring token; unlock gives it back.
func (p *Plugin) lock()   { p.token() <- struct{}{} }
func (p *Plugin) unlock() { <-p.token() }

// recent is the newest answer serving kind k if it is at most max_age old.
func (p *Plugin) recent(k kind) *answer {
	a, maxAge := p.newest(k)
	if a != nil && time.Since(a.at) <= maxAge {
		return a
	}
	return nil
}

// Shutdown stops the disk usage walker.
func (p *Plugin) Shutdown(context.Context) error {
	p.lock()
	defer p.unlock()
	if p.sampler != nil {
		p.sampler.diskUsage.Close()
	}
	return nil
}
