// Package smaps reads a process's memory use the way the benchmarks report
// it: resident and proportional set size, and the anonymous part, from
// /proc/<pid>/smaps_rollup.
package smaps

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's use, in KB.
type Memory struct {
	// RssKB and PssKB are the resident and proportional set sizes.
	RssKB, PssKB int64
	// AnonKB is the resident anonymous memory (heap, stacks).
	AnonKB int64
}

// Rollup reads the memory use of process pid ("self" for the caller).
func Rollup(pid string) (Memory, error) {
	path := "/proc/" + pid + "/smaps_rollup"
	f, err := os.Open(path)
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 2 {
			continue
		}
		var target *int64
		switch fields[0] {
		case "Rss:":
			target = &m.RssKB
		case "Pss:":
			target = &m.PssKB
		case "Anonymous:":
			target = &m.AnonKB
		default:
			continue
		}
		if *target, err = strconv.ParseInt(fields[1], 10, 64); err != nil {
			return Memory{}, fmt.Errorf("%s: line %q: %w", path, lines.Text(), err)
		}
	}
	return m, lines.Err()
}
