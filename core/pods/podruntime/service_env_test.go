package podruntime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestServiceVariables(t *testing.T) {
	services := []*v1.Service{
		service("default", "kubernetes", "10.0.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		service("default", "other", "10.0.0.9", v1.ServicePort{Port: 80}),
		service("app", "my-db", "10.0.0.5", v1.ServicePort{Port: 5432}, v1.ServicePort{Name: "metrics-port", Port: 9187, Protocol: v1.ProtocolUDP}),
		service("app", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		service("app", "v6", "fd00::5", v1.ServicePort{Port: 80}),
	}
	master := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.0.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.0.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.0.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.0.0.1",
	}
	withLinks := map[string]string{
		"MY_DB_SERVICE_HOST":              "10.0.0.5",
		"MY_DB_SERVICE_PORT":              "5432",
		"MY_DB_SERVICE_PORT_METRICS_PORT": "9187",
		"MY_DB_PORT":                      "tcp://10.0.0.5:5432",
		"MY_DB_PORT_5432_TCP":             "tcp://10.0.0.5:5432",
		"MY_DB_PORT_5432_TCP_PROTO":       "tcp",
		"MY_DB_PORT_5432_TCP_PORT":        "5432",
		"MY_DB_PORT_5432_TCP_ADDR":        "10.0.0.5",
		"MY_DB_PORT_9187_UDP":             "udp://10.0.0.5:9187",
		"MY_DB_PORT_9187_UDP_PROTO":       "udp",
		"MY_DB_PORT_9187_UDP_PORT":        "9187",
		"MY_DB_PORT_9187_UDP_ADDR":        "10.0.0.5",
		"V6_SERVICE_HOST":                 "fd00::5",
		"V6_SERVICE_PORT":                 "80",
		"V6_PORT":                         "tcp://[fd00::5]:80",
		"V6_PORT_80_TCP":                  "tcp://[fd00::5]:80",
		"V6_PORT_80_TCP_PROTO":            "tcp",
		"V6_PORT_80_TCP_PORT":             "80",
		"V6_PORT_80_TCP_ADDR":             "fd00::5",
	}
	for k, v := range master {
		withLinks[k] = v
	}
	if diff := cmp.Diff(master, serviceVariables(services, "app", false)); diff != "" {
		t.Errorf("links disabled: only the master service's (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(withLinks, serviceVariables(services, "app", true)); diff != "" {
		t.Errorf("links enabled: the namespace's services and the master's, no headless one (-want +got):\n%s", diff)
	}
	// A Service of the pod's namespace named like the master service
	// replaces it.
	own := append(services, service("app", "kubernetes", "10.0.0.7", v1.ServicePort{Port: 8080}))
	if got := serviceVariables(own, "app", true)["KUBERNETES_SERVICE_HOST"]; got != "10.0.0.7" {
		t.Errorf("KUBERNETES_SERVICE_HOST = %q, want the namespace's own kubernetes Service", got)
	}
}

type fakeServices struct {
	synced   bool
	services []*v1.Service
}

func (f *fakeServices) HasSynced() bool                    { return f.synced }
func (f *fakeServices) List(string) []*v1.Service          { return f.services }
func (f *fakeServices) set(s ...*v1.Service) *fakeServices { f.services = s; return f }

func TestServiceEnvWaitsForServicesForAPIPods(t *testing.T) {
	lister := (&fakeServices{}).set(service("default", "kubernetes", "10.0.0.1", v1.ServicePort{Port: 443}))
	m := &Manager{opts: Options{Services: lister}}
	api := testPod(func(p *v1.Pod) { p.Annotations = map[string]string{podspec.ConfigSourceAnnotationKey: "api"} })
	static := testPod(func(p *v1.Pod) { p.Annotations = map[string]string{podspec.ConfigSourceAnnotationKey: "file"} })
	if _, err := m.serviceEnv(api); err != errServicesNotSynced {
		t.Errorf("an API pod before the services are listed: error %v, want %v", err, errServicesNotSynced)
	}
	if env, err := m.serviceEnv(static); err != nil || env["KUBERNETES_SERVICE_HOST"] != "10.0.0.1" {
		t.Errorf("a static pod does not wait: %v, %v", env, err)
	}
	lister.synced = true
	if env, err := m.serviceEnv(api); err != nil || env["KUBERNETES_SERVICE_HOST"] != "10.0.0.1" {
		t.Errorf("an API pod once listed: %v, %v", env, err)
	}
	if env, err := (&Manager{}).serviceEnv(api); err != nil || env != nil {
		t.Errorf("a standalone node: %v, %v, want no variables", env, err)
	}
}
