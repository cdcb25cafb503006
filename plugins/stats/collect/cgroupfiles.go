package collect

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// readUint reads a control file holding one unsigned number.
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: expected an unsigned number, got %q", path, bytes.TrimSpace(b))
	}
	return v, nil
}

// readLimit reads a cgroup v2 limit file: a number, or "max" for none
// (nil).
func readLimit(path string) (*uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return nil, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: expected a number or \"max\", got %q", path, s)
	}
	return &v, nil
}

// readKeyValues reads a flat keyed file ("key value" per line, as
// memory.stat and cpu.stat), keeping only the keys in want.
func readKeyValues(path string, want ...string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(want))
	for line := range bytes.Lines(b) {
		key, value, ok := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
		if !ok || !containsKey(want, key) {
			continue
		}
		v, err := strconv.ParseUint(string(value), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: expected an unsigned number, got %q", path, key, value)
		}
		out[string(key)] = v
	}
	return out, nil
}

func containsKey(keys []string, key []byte) bool {
	for _, k := range keys {
		if k == string(key) {
			return true
		}
	}
	return false
}

// countLines counts the non-empty lines of a file (the pids in
// cgroup.procs).
func countLines(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var n uint64
	for line := range bytes.Lines(b) {
		if len(bytes.TrimSpace(line)) > 0 {
			n++
		}
	}
	return n, nil
}

// firstLine reads the number on a file's first line (a pid of
// cgroup.procs).
func firstLine(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	n, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil {
		return 0, fmt.Errorf("%s: expected a pid on the first line, got %q", path, line)
	}
	return n, nil
}

// readPressure reads a pressure stall information file (cpu.pressure,
// /proc/pressure/io, ...): "some" and "full" lines of
// "avg10=.. avg60=.. avg300=.. total=..". Totals are the kernel's
// microseconds, passed on as cadvisor passes them.
func readPressure(path string) (*typesv1.PSIStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := &typesv1.PSIStats{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		kind, rest, _ := strings.Cut(scanner.Text(), " ")
		var d typesv1.PSIData
		if _, err := fmt.Sscanf(rest, "avg10=%f avg60=%f avg300=%f total=%d", &d.Avg10, &d.Avg60, &d.Avg300, &d.Total); err != nil {
			return nil, fmt.Errorf("%s: expected \"%s avg10=<n> avg60=<n> avg300=<n> total=<n>\", got %q", path, kind, scanner.Text())
		}
		switch kind {
		case "some":
			out.Some = &d
		case "full":
			out.Full = &d
		}
	}
	return out, scanner.Err()
}
