//go:build linux

package exepages

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestFixedAddress(t *testing.T) {
	// go test links a fixed-address executable on linux unless told
	// -buildmode=pie; a file that is not ELF never qualifies.
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if fixed, err := fixedAddress("/proc/self/exe"); err != nil || !fixed {
		t.Errorf("fixedAddress(/proc/self/exe) = %v, %v; want true", fixed, err)
	}
	if fixed, err := fixedAddress(notELF); err == nil || fixed {
		t.Errorf("fixedAddress(a shell script) = %v, %v; want an error", fixed, err)
	}
}

// A release unmaps the test binary's code and read-only data, and the
// test goes on running: what it touches next maps back.
func TestReleaseUnmapsTheExecutable(t *testing.T) {
	before := executableRSS(t)
	if before == 0 {
		t.Fatal("the executable maps no resident page before the release")
	}
	if err := Release(); err != nil {
		t.Fatal(err)
	}
	after := executableRSS(t)
	if after >= before {
		t.Errorf("resident executable pages: %d kB before the release, %d kB after; want fewer", before, after)
	}
}

// executableRSS sums the resident kB of the read-only mappings of the
// running executable, from /proc/self/smaps.
func executableRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, counting := 0, false
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			counting = len(fields) >= 6 && fields[5] == exe && !strings.ContainsRune(fields[1], 'w')
		case counting && fields[0] == "Rss:":
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kb
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
