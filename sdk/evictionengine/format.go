package evictionengine

import "strconv"

// Eviction messages print amounts the way the kubelet prints a
// resource.Quantity built with resource.NewQuantity: bytes in the canonical
// binary form ("80Mi", "83886081"), counts in the canonical decimal form
// ("50k", "1500"). These two functions reproduce that formatting so that
// the plugin need not link k8s.io/apimachinery.

// formatBinarySI formats n as a BinarySI quantity. Like apimachinery, values
// strictly between -1024 and 1024 are written in decimal form ("1k").
func formatBinarySI(n int64) string {
	if n > -1024 && n < 1024 {
		return formatDecimalSI(n)
	}
	suffixes := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	i := 0
	for i < len(suffixes)-1 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + suffixes[i]
}

// formatDecimalSI formats n as a DecimalSI quantity: trailing zeros are
// folded into a suffix whose exponent is a multiple of three.
func formatDecimalSI(n int64) string {
	if n == 0 {
		return "0"
	}
	suffixes := []string{"", "k", "M", "G", "T", "P", "E"}
	i := 0
	for i < len(suffixes)-1 && n%1000 == 0 {
		n /= 1000
		i++
	}
	return strconv.FormatInt(n, 10) + suffixes[i]
}

// formatAmount formats an amount of the signal's resource.
func formatAmount(s Signal, n int64) string {
	if s.countsBytes() {
		return formatBinarySI(n)
	}
	return formatDecimalSI(n)
}
