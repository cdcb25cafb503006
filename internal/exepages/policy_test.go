//go:build linux

package exepages

import (
	"os"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	start := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	type step struct {
		at               time.Duration
		mapped           int64
		release, collect bool
		// left is what a release leaves mapped.
		left int64
	}
	// Times are from the policy's start, a release with a collection;
	// s is settle, h half a tick.
	const s, h = settle, tick / 2
	for _, tc := range []struct {
		name  string
		ticks []step
	}{
		{"the steady level, a burst beyond it, then quiet: released at the first quiet tick", []step{
			{at: s - tick, mapped: 2000},
			{at: s, mapped: 2010}, // the steady level
			{at: s + 2*tick, mapped: 2010},
			{at: s + 3*tick, mapped: 4000},
			{at: s + 4*tick, mapped: 4010, release: true, left: 300},
		}},
		{"a burst that still grows is not over", []step{
			{at: s, mapped: 2000},
			{at: s + tick, mapped: 2000},
			{at: s + 2*tick, mapped: 4000},
			{at: s + 3*tick, mapped: 6000},
			{at: s + 4*tick, mapped: 8000},
		}},
		{"the steady work mapping back what it uses is no burst", []step{
			{at: h, mapped: 1000},
			{at: tick, mapped: 2500},
			{at: s - h, mapped: 2500},
			{at: s, mapped: 2500},
			{at: s + tick, mapped: 2500},
			{at: Interval - h, mapped: 2500 + growth - 1},
		}},
		{"no steady level until a quiet tick settle after the release", []step{
			{at: s - tick, mapped: 2000},
			{at: s - h, mapped: 2500},
			{at: s, mapped: 2500}, // the steady level
			{at: s + h, mapped: 2500 + growth, release: false},
			{at: s + tick, mapped: 2500 + growth, release: true, left: 300},
		}},
		{"a burst within settle of a release: released again once it is over", []step{
			{at: s - tick, mapped: 2000},
			{at: s, mapped: 2000}, // the steady level
			{at: s + tick, mapped: 4000},
			{at: s + 2*tick, mapped: 4000, release: true, left: 300},
			{at: s + 3*tick, mapped: 4000}, // the next burst, within settle
			// 8 s after the start: a collection too.
			{at: 2*s + 2*tick, mapped: 4000, release: true, collect: true, left: 300},
		}},
		{"Interval after the last release, busy or not", []step{
			{at: Interval - tick, mapped: 1000},
			{at: Interval, mapped: 2000, release: true, collect: true, left: 300},
		}},
		{"a collection at most every collectGap", []step{
			{at: s, mapped: 1000},
			{at: s + h, mapped: 1000},
			{at: s + tick, mapped: 4000},
			{at: s + tick + h, mapped: 4000, release: true, left: 300},
			{at: 2*s + tick + h, mapped: 1000},
			{at: 2*s + 2*tick, mapped: 1000},
			{at: 2*s + 2*tick + h, mapped: 4000},
			// 9 s after the start: a collection is due.
			{at: 2*s + 3*tick, mapped: 4000, release: true, collect: true, left: 300},
			{at: 3*s + 3*tick, mapped: 1000},
			{at: 3*s + 4*tick, mapped: 4000},
			{at: 3*s + 5*tick, mapped: 4000, release: true, left: 300},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The process started mapping 300 pages, with a collection.
			p := newPolicy(start, 300)
			for i, k := range tc.ticks {
				release, collect := p.step(at(k.at), k.mapped)
				if release != k.release || collect != k.collect {
					t.Fatalf("tick %d at %v with %d pages: release %v collect %v; want %v %v", i, k.at, k.mapped, release, collect, k.release, k.collect)
				}
				if release {
					p.released(at(k.at), k.left, collect)
				}
			}
		})
	}
}

func TestParseStatm(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    int64
		wantErr bool
	}{
		{"434813 11523 5410 6916 0 33251 0\n", 5410, false},
		{"1 2 3", 3, false},
		{"1 2", 0, true},
		{"1 2 x 4", 0, true},
		{"", 0, true},
	} {
		got, err := parseStatm(tc.line)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseStatm(%q) = %d, %v; want %d, error %v", tc.line, got, err, tc.want, tc.wantErr)
		}
	}
}

// The loop reads this process's statm: a Go test binary maps its own
// executable, so the file pages are more than none.
func TestFilePages(t *testing.T) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 2 { // a second read at offset 0 reads the line again
		pages, err := filePages(f)
		if err != nil {
			t.Fatal(err)
		}
		if pages <= 0 {
			t.Fatalf("filePages = %d; want the test binary's pages", pages)
		}
	}
}
