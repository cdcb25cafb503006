package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	if err := Register(nil, a, b); err != nil {
		t.Fatalf("nil registry: %v", err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, a, b); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil || len(families) != 2 {
		t.Fatalf("gathered %d families (%v); want 2", len(families), err)
	}
	if err := Register(reg, a); err == nil {
		t.Error("registering a collector twice succeeded")
	}
}
