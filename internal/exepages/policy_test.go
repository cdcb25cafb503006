//go:build linux

package exepages

import (
	"errors"
	"os"
	"testing"
)

func TestWaitQuiet(t *testing.T) {
	for _, tc := range []struct {
		name string
		// reads are the mapped pages at the tick, then after each sleep.
		reads  []int64
		sleeps int
	}{
		{"no burst: released after one poll", []int64{3000, 3000}, 1},
		{"a little growth is quiet", []int64{3000, 3000 + quietSlack - 1}, 1},
		{"a burst under way: released once a read finds no growth", []int64{3000, 4000, 4500, 4510}, 3},
		{"a burst that keeps growing: released after maxPolls", []int64{3000, 4000, 5000, 6000, 7000, 8000, 9000}, maxPolls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads, sleeps := 0, 0
			read := func() (int64, error) {
				if reads >= len(tc.reads) {
					t.Fatalf("read %d: the test gives %d", reads+1, len(tc.reads))
				}
				reads++
				return tc.reads[reads-1], nil
			}
			if err := waitQuiet(read, func() { sleeps++ }); err != nil {
				t.Fatal(err)
			}
			if sleeps != tc.sleeps {
				t.Errorf("waited %d polls; want %d", sleeps, tc.sleeps)
			}
		})
	}
}

func TestWaitQuietReadError(t *testing.T) {
	failed := errors.New("statm gone")
	n := 0
	read := func() (int64, error) {
		n++
		if n == 2 {
			return 0, failed
		}
		return 3000, nil
	}
	if err := waitQuiet(read, func() {}); !errors.Is(err, failed) {
		t.Errorf("waitQuiet = %v; want %v", err, failed)
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
