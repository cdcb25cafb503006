package planner

import (
	"slices"
	"strings"

	"github.com/microlet/microlet/sdk"
)

// hugePagesUnbounded is the hugetlb limit of the QoS cgroups (upstream
// setHugePagesUnbounded): effectively none.
const hugePagesUnbounded = 1 << 62

// hugePageSize is the page size of a hugepages-<size> resource in bytes;
// false for other names and sizes that are not a positive quantity.
func hugePageSize(name string) (int64, bool) {
	size, ok := strings.CutPrefix(name, hugePagesPrefix)
	if !ok {
		return 0, false
	}
	q, err := sdk.ParseQuantity(size)
	if err != nil || q.Sign() <= 0 {
		return 0, false
	}
	return q.Value(), true
}

// pageSizeKey names a page size as CgroupSettings.hugepage_limits does:
// the canonical binary quantity of its bytes ("2Mi", "1Gi").
func pageSizeKey(bytes int64) string { return sdk.BinaryQuantity(bytes).String() }

// pageSizes are the node's huge page sizes in bytes, from the
// hugepages-<size> resources of its capacity, smallest first.
func pageSizes(capacity amounts) []int64 {
	var sizes []int64
	for name := range capacity {
		if size, ok := hugePageSize(name); ok && !slices.Contains(sizes, size) {
			sizes = append(sizes, size)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// hugePageLimits are hugetlb limits by page size: every page size of the
// node gets fill, then each hugepages-<size> amount of list is added to
// its size when sum is true (a pod's total, upstream HugePageLimits) or
// replaces it when false (one container's limit, upstream
// GetHugepageLimitsFromResources).
func hugePageLimits(nodeSizes []int64, fill int64, list amounts, sum bool) map[string]int64 {
	limits := map[string]int64{}
	for _, size := range nodeSizes {
		limits[pageSizeKey(size)] = fill
	}
	for _, name := range sortedKeys(list) {
		size, ok := hugePageSize(name)
		if !ok {
			continue
		}
		key := pageSizeKey(size)
		if sum {
			limits[key] += list[name]
		} else {
			limits[key] = list[name]
		}
	}
	if len(limits) == 0 {
		return nil
	}
	return limits
}
