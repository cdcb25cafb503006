// Package smaps reads a process's memory use the way the benchmarks report
// it: resident and proportional set size from /proc/<pid>/smaps_rollup.
package smaps

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Rollup returns the Rss and Pss, in KB, of process pid ("self" for the
// caller).
func Rollup(pid string) (rssKB, pssKB int64, err error) {
	path := "/proc/" + pid + "/smaps_rollup"
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 2 {
			continue
		}
		var target *int64
		switch fields[0] {
		case "Rss:":
			target = &rssKB
		case "Pss:":
			target = &pssKB
		default:
			continue
		}
		if *target, err = strconv.ParseInt(fields[1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%s: line %q: %w", path, lines.Text(), err)
		}
	}
	return rssKB, pssKB, lines.Err()
}
