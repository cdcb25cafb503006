package collect

import (
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/plugins/stats/summary"
)

// DiskUsageCache answers the disk usage of directory trees from the last
// walk, and walks a tree again in the background once its last walk is
// older than the period: the kubelet's volumeStatCalculator, which walks
// each pod's volumes every volumeStatsAggPeriod. A summary then costs no
// walk, whatever the size of the trees; a tree's usage is known once its
// first walk has finished. One goroutine walks, one tree at a time, so
// that walks never pile up on a busy node.
type DiskUsageCache struct {
	period time.Duration
	log    hclog.Logger

	mu      sync.Mutex
	entries map[string]*diskUsageEntry
	queue   []string
	swept   time.Time
	wake    chan struct{}
	done    chan struct{}
	close   sync.Once
	stopped chan struct{}
}

type diskUsageEntry struct {
	usage *summary.DiskUsage
	// walked is when the last walk finished, successful or not.
	walked time.Time
	// wanted is when Get last asked for the tree.
	wanted time.Time
	queued bool
}

// NewDiskUsageCache starts the walker. Close stops it.
func NewDiskUsageCache(period time.Duration, log hclog.Logger) *DiskUsageCache {
	c := &DiskUsageCache{
		period:  period,
		log:     log,
		entries: map[string]*diskUsageEntry{},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go c.walk()
	return c
}

// Get returns the last usage of the tree at path, nil before its first
// walk has finished, and asks for a walk when the last one is older than
// the period.
func (c *DiskUsageCache) Get(path string) *summary.DiskUsage {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now)
	e, ok := c.entries[path]
	if !ok {
		e = &diskUsageEntry{}
		c.entries[path] = e
	}
	e.wanted = now
	if !e.queued && (e.walked.IsZero() || now.Sub(e.walked) >= c.period) {
		e.queued = true
		c.queue = append(c.queue, path)
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return e.usage
}

// sweep forgets trees nobody asked for in two periods, and at least ten
// minutes (their pods are gone), looking at most once a minute.
func (c *DiskUsageCache) sweep(now time.Time) {
	if now.Sub(c.swept) < time.Minute {
		return
	}
	c.swept = now
	retention := max(2*c.period, 10*time.Minute)
	for path, e := range c.entries {
		if !e.queued && now.Sub(e.wanted) > retention {
			delete(c.entries, path)
		}
	}
}

// Close stops the walker and waits for a walk in progress to end.
func (c *DiskUsageCache) Close() {
	c.close.Do(func() { close(c.done) })
	<-c.stopped
}

func (c *DiskUsageCache) walk() {
	defer close(c.stopped)
	for {
		select {
		case <-c.done:
			return
		case <-c.wake:
		}
		for path, ok := c.next(); ok; path, ok = c.next() {
			usage, err := DiskUsage(path)
			gone := errors.Is(err, fs.ErrNotExist)
			if err != nil && !gone {
				// The last usage stays: one failed walk (a permission
				// change, an I/O error) is no reason to report nothing.
				c.log.Warn("cannot measure disk usage; keeping the last measurement", "path", path, "error", err)
			}
			c.mu.Lock()
			if e := c.entries[path]; e != nil {
				e.queued, e.walked = false, time.Now()
				if usage != nil || gone {
					e.usage = usage
				}
			}
			c.mu.Unlock()
			select {
			case <-c.done:
				return
			default:
			}
		}
	}
}

func (c *DiskUsageCache) next() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return "", false
	}
	path := c.queue[0]
	c.queue = c.queue[1:]
	return path, true
}
