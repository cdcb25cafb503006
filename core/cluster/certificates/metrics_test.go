package certificates

import (
	"crypto/tls"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/microlet/microlet/internal/devcluster"
)

// fakeManager holds a certificate, or none.
type fakeManager struct{ current *tls.Certificate }

func (f *fakeManager) Start()                    {}
func (f *fakeManager) Stop()                     {}
func (f *fakeManager) ServerHealthy() bool       { return true }
func (f *fakeManager) Current() *tls.Certificate { return f.current }

// TestMetrics checks the kubelet's names and the TTL: +Inf without a
// certificate, the seconds left with one.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	client, serving := &fakeManager{}, &fakeManager{}
	if err := clientMetrics().register(reg, "client", client); err != nil {
		t.Fatal(err)
	}
	if err := servingMetrics().register(reg, "server", serving); err != nil {
		t.Fatal(err)
	}
	want := []string{"kubelet_certificate_manager_client_expiration_renew_errors", "kubelet_certificate_manager_client_ttl_seconds",
		"kubelet_server_expiration_renew_errors", "kubelet_certificate_manager_server_rotation_seconds", "kubelet_certificate_manager_server_ttl_seconds"}
	if n, err := testutil.GatherAndCount(reg, want...); err != nil || n != len(want) {
		t.Errorf("%d of the kubelet's certificate series, want %d: %v", n, len(want), err)
	}
	ttl := func(name string) float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	if v := ttl("kubelet_certificate_manager_client_ttl_seconds"); !math.IsInf(v, 1) {
		t.Errorf("client TTL without a certificate: %v, want +Inf", v)
	}
	ca, _ := devcluster.NewCA("cluster")
	pair, _ := ca.ClientCert("system:node:n", "system:nodes")
	cert, err := pair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	client.current = &cert
	if v, left := ttl("kubelet_certificate_manager_client_ttl_seconds"), time.Until(cert.Leaf.NotAfter).Seconds(); v > left || v < left-60 {
		t.Errorf("client TTL %v, want about %v", v, left)
	}
}
