package cpumanager

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// cpuSet is a sorted set of CPU ids. It is the few operations the policy
// needs, so that the plugin links no k8s.io package (k8s.io/utils/cpuset
// is what the core uses for the same format).
type cpuSet []int

// parseCPUs reads the Linux list format ("0-2,5").
func parseCPUs(s string) (cpuSet, error) {
	var set cpuSet
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("invalid CPU list %q: %q is not a CPU id", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("invalid CPU list %q: bad range %q", s, part)
			}
		}
		for id := a; id <= b; id++ {
			set = append(set, id)
		}
	}
	slices.Sort(set)
	return slices.Compact(set), nil
}

// String is the Linux list format, ranges collapsed.
func (s cpuSet) String() string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			b.WriteString(strconv.Itoa(s[i]))
		} else {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		}
		i = j + 1
	}
	return b.String()
}

func (s cpuSet) contains(id int) bool { _, ok := slices.BinarySearch(s, id); return ok }

func (s cpuSet) union(o cpuSet) cpuSet {
	u := slices.Concat(s, o)
	slices.Sort(u)
	return slices.Compact(u)
}

func (s cpuSet) difference(o cpuSet) cpuSet {
	var d cpuSet
	for _, id := range s {
		if !o.contains(id) {
			d = append(d, id)
		}
	}
	return d
}
