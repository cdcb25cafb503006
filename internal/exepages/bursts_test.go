//go:build linux

package exepages

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// fakeProcess is what bursts sees of a process: one page of files mapped
// per executable page mapped, and what it did, in order.
type fakeProcess struct {
	pages  []bool
	events []string // "collect", or "release lo-hi ..." (inclusive runs)
}

func (p *fakeProcess) bursts() *bursts {
	return &bursts{
		read: func() (int64, error) {
			n := int64(0)
			for _, present := range p.pages {
				if present {
					n++
				}
			}
			return n, nil
		},
		present: func() ([]bool, error) { return slices.Clone(p.pages), nil },
		release: func(pages []bool) error {
			var runs []string
			for i := 0; i < len(pages); i++ {
				if !pages[i] {
					continue
				}
				j := i
				for j+1 < len(pages) && pages[j+1] {
					j++
				}
				runs = append(runs, fmt.Sprintf("%d-%d", i, j))
				for k := i; k <= j; k++ {
					p.pages[k] = false
				}
				i = j
			}
			p.events = append(p.events, "release "+strings.Join(runs, " "))
			return nil
		},
		collect: func() { p.events = append(p.events, "collect") },
	}
}

func TestBursts(t *testing.T) {
	const steady = 100             // the steady work's pages, [0, steady)
	big := burstSlack + quietSlack // a burst's pages
	burstEnd := steady + big - 1
	type step struct {
		touch         [2]int // pages mapped before the poll, [lo, hi)
		heap, relearn bool
		want          string // what the poll did, "" for nothing
	}
	// learned are the polls that learn [0, steady) as the steady pages.
	learned := []step{
		{touch: [2]int{0, steady}},
		{want: "release 0-99"},
		{touch: [2]int{0, steady}, want: "release 0-99"},
		{touch: [2]int{0, steady}},
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{
			name: "learns the steady pages from two releases, leaving out a burst in one of them",
			steps: []step{
				{touch: [2]int{0, steady + 50}},                        // start-up, growing
				{want: "release 0-149"},                                // quiet: everything goes
				{touch: [2]int{0, steady + 50}, want: "release 0-149"}, // mapped again, with a burst: everything goes again
				{touch: [2]int{0, steady}},                             // the steady pages alone come back: learned
				{touch: [2]int{steady, steady + big}},
				{want: fmt.Sprintf("release %d-%d", steady, burstEnd)}, // the burst is over: its pages go
			},
		},
		{
			name: "each burst's pages go, the steady pages stay",
			steps: append(slices.Clone(learned),
				step{touch: [2]int{steady, steady + big}},
				step{want: fmt.Sprintf("release %d-%d", steady, burstEnd)},
				step{touch: [2]int{steady, steady + big}}, // the next burst maps the same code
				step{want: fmt.Sprintf("release %d-%d", steady, burstEnd)},
			),
		},
		{
			name: "a burst under burstSlack stays",
			steps: append(slices.Clone(learned),
				step{touch: [2]int{steady, steady + burstSlack - 1}},
				step{},
				step{},
			),
		},
		{
			name: "a burst still growing stays until it is over",
			steps: append(slices.Clone(learned),
				step{touch: [2]int{steady, steady + big}},
				step{touch: [2]int{steady + big, steady + 2*big}},
				step{want: fmt.Sprintf("release %d-%d", steady, steady+2*big-1)},
			),
		},
		{
			name: "relearning starts over",
			steps: append(slices.Clone(learned),
				step{relearn: true},
				step{want: "release 0-99"},
				step{touch: [2]int{0, steady / 2}, want: "release 0-49"}, // the steady work now maps half
				step{touch: [2]int{0, steady / 2}},
				step{touch: [2]int{steady / 2, steady + big}},
				step{want: fmt.Sprintf("release 50-%d", burstEnd)}, // the other half is a burst's now
			),
		},
		{
			name: "the heap is collected at the first quiet poll, after maxPolls at the latest",
			steps: func() []step {
				s := []step{{touch: [2]int{0, quietSlack}, heap: true}}
				for i := 1; i < maxPolls; i++ {
					s = append(s, step{touch: [2]int{0, quietSlack * (i + 1)}})
				}
				s = append(s, step{touch: [2]int{0, quietSlack * (maxPolls + 1)}, want: "collect"})
				return append(s, step{heap: true, want: fmt.Sprintf("collect release 0-%d", quietSlack*(maxPolls+1)-1)})
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProcess{pages: make([]bool, steady+2*big)}
			b := p.bursts()
			for i, s := range tc.steps {
				p.touch(s.touch[0], s.touch[1])
				p.events = nil
				if err := b.tick(s.heap, s.relearn); err != nil {
					t.Fatalf("poll %d: %v", i, err)
				}
				if got := strings.Join(p.events, " "); got != s.want {
					t.Fatalf("poll %d did %q, want %q", i, got, s.want)
				}
			}
		})
	}
}

// touch maps pages [lo, hi).
func (p *fakeProcess) touch(lo, hi int) {
	for i := lo; i < hi; i++ {
		p.pages[i] = true
	}
}

// presentPages and releasePages on this test's own executable: the pages
// marked go, the others stay.
func TestReleaseOnlyMarkedPages(t *testing.T) {
	ranges, err := executableRanges()
	if err != nil || len(ranges) == 0 {
		t.Fatalf("executable ranges %v, %v", ranges, err)
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer pagemap.Close()
	before, err := presentPages(pagemap, ranges)
	if err != nil {
		t.Fatal(err)
	}
	// Mark the present pages of the last range (read-only data the test
	// does not touch between the two reads); keep the rest.
	last := ranges[len(ranges)-1]
	lastStart := len(before) - int((last.hi-last.lo)/pageSize)
	marked := make([]bool, len(before))
	markedBefore, keptBefore := 0, 0
	for i, present := range before {
		switch {
		case present && i >= lastStart:
			marked[i] = true
			markedBefore++
		case present:
			keptBefore++
		}
	}
	if markedBefore == 0 || keptBefore == 0 {
		t.Fatalf("present pages: %d in the last range, %d before it; want some of both", markedBefore, keptBefore)
	}
	if err := releasePages(ranges, marked); err != nil {
		t.Fatal(err)
	}
	after, err := presentPages(pagemap, ranges)
	if err != nil {
		t.Fatal(err)
	}
	markedAfter, keptAfter := 0, 0
	for i, present := range after {
		switch {
		case present && marked[i]:
			markedAfter++
		case present && before[i]:
			keptAfter++
		}
	}
	if markedAfter*2 > markedBefore {
		t.Errorf("%d of %d marked pages still mapped after their release", markedAfter, markedBefore)
	}
	if keptAfter != keptBefore {
		t.Errorf("%d of %d unmarked pages still mapped; the release took some", keptAfter, keptBefore)
	}
}
