package evictionengine

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The formatters stand in for resource.NewQuantity(n, format).String() in the
// kubelet's messages; the test holds them to apimachinery itself (test-only
// import: the plugin binaries do not link it).
func TestFormatMatchesApimachinery(t *testing.T) {
	values := []int64{
		0, 1, -1, 5, 999, 1000, -1000, 1001, 1023, -1023, 1024, -1024, 1025, 1500, 2048, 5000,
		50000, 100000, 1000000, 1200000, 1 << 20, 80 << 20, 80<<20 + 1, 100 << 20, 1 << 30, 1000000000,
		81236 << 10, 3 << 40, 1 << 50, 1 << 60, 1e18, 2e18, -(1 << 30), -5000, -1200000,
		math.MaxInt64, math.MinInt64 + 1,
	}
	for _, n := range values {
		if got, want := formatBinarySI(n), resource.NewQuantity(n, resource.BinarySI).String(); got != want {
			t.Errorf("formatBinarySI(%d) = %q, apimachinery says %q", n, got, want)
		}
		if got, want := formatDecimalSI(n), resource.NewQuantity(n, resource.DecimalSI).String(); got != want {
			t.Errorf("formatDecimalSI(%d) = %q, apimachinery says %q", n, got, want)
		}
	}
}

func TestFormatAmountBySignal(t *testing.T) {
	tests := []struct {
		signal Signal
		n      int64
		want   string
	}{
		{SignalMemoryAvailable, 80 << 20, "80Mi"},
		{SignalAllocatableMemoryAvailable, 1000, "1k"},
		{SignalNodeFsAvailable, 3 << 30, "3Gi"},
		{SignalImageFsAvailable, 1 << 30, "1Gi"},
		{SignalNodeFsInodesFree, 50000, "50k"},
		{SignalImageFsInodesFree, 1024, "1024"},
		{SignalPIDAvailable, 2000, "2k"},
	}
	for _, tt := range tests {
		if got := formatAmount(tt.signal, tt.n); got != tt.want {
			t.Errorf("formatAmount(%s, %d) = %q, want %q", tt.signal, tt.n, got, tt.want)
		}
	}
}
