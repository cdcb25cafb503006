package nodefacts

// WorkingSet is cAdvisor's working set of a cgroup (or of the node): its
// memory usage less the inactive file pages the kernel can reclaim
// (total_inactive_file on cgroup v1, inactive_file on v2), never below 0.
// It is what memory.available and the summary API's workingSetBytes use.
func WorkingSet(usage, inactiveFile uint64) uint64 {
	return usage - min(usage, inactiveFile)
}
