package planner

// CPU conversions of upstream pkg/kubelet/cm/helpers_linux.go.
const (
	// MinShares and MaxShares are the kernel's bounds of cpu.shares.
	MinShares = 2
	MaxShares = 262144
	// SharesPerCPU are the shares of one CPU.
	SharesPerCPU  = 1024
	milliCPUToCPU = 1000
	// MinQuotaPeriod is the smallest CFS quota the kernel takes, in
	// microseconds (1ms).
	MinQuotaPeriod = 1000
)

// MilliCPUToShares converts millicores to cpu.shares, within
// [MinShares, MaxShares]; zero gives MinShares.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		// Zero would leave the kernel's default of 1024; 2 is what zero means.
		return MinShares
	}
	shares := (milliCPU * SharesPerCPU) / milliCPUToCPU
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts millicores to a CFS quota over period (both in
// microseconds), at least MinQuotaPeriod; zero millicores give zero, which
// means no quota.
func MilliCPUToQuota(milliCPU int64, period uint64) int64 {
	if milliCPU == 0 {
		return 0
	}
	quota := (milliCPU * int64(period)) / milliCPUToCPU
	if quota < MinQuotaPeriod {
		return MinQuotaPeriod
	}
	return quota
}
