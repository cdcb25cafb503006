package podruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/cluster/events/eventstest"
)

func TestPodDNS(t *testing.T) {
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte(`# the host's
nameserver 192.0.2.53
nameserver 192.0.2.54
search example.com corp.example.com.
options timeout:2 ndots:1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	host := &runtimeapi.DNSConfig{
		Servers:  []string{"192.0.2.53", "192.0.2.54"},
		Searches: []string{"example.com", "corp.example.com"},
		Options:  []string{"timeout:2", "ndots:1"},
	}
	cluster := &dnsConfigurer{clusterDNS: mustIPs(t, "10.96.0.10"), clusterDomain: "cluster.local", resolvConf: resolvConf, log: hclog.NewNullLogger()}
	noClusterDNS := &dnsConfigurer{clusterDomain: "cluster.local", resolvConf: resolvConf, log: hclog.NewNullLogger()}
	noResolvConf := &dnsConfigurer{nodeIPs: mustIPs(t, "2001:db8::1", "192.0.2.10"), log: hclog.NewNullLogger()}
	policy := func(p v1.DNSPolicy) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.DNSPolicy = p } }
	clusterFirst := &runtimeapi.DNSConfig{
		Servers:  []string{"10.96.0.10"},
		Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example.com"},
		Options:  []string{"ndots:5"},
	}

	for _, tc := range []struct {
		name string
		d    *dnsConfigurer
		pod  *v1.Pod
		want *runtimeapi.DNSConfig
	}{
		{name: "ClusterFirst", d: cluster, pod: testPod(), want: clusterFirst},
		{name: "ClusterFirst on the host network is Default", d: cluster, pod: testPod(withHostNetwork), want: host},
		{name: "ClusterFirstWithHostNet", d: cluster, pod: testPod(withHostNetwork, policy(v1.DNSClusterFirstWithHostNet)), want: clusterFirst},
		{name: "ClusterFirst without cluster DNS falls back to Default", d: noClusterDNS, pod: testPod(), want: host},
		{name: "Default", d: cluster, pod: testPod(policy(v1.DNSDefault)), want: host},
		{name: "Default without a resolv.conf uses the node's loopback", d: noResolvConf, pod: testPod(policy(v1.DNSDefault)),
			want: &runtimeapi.DNSConfig{Servers: []string{"::1", "127.0.0.1"}, Searches: []string{"."}}},
		{name: "None takes only dnsConfig", d: cluster, pod: testPod(policy(v1.DNSNone), func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}}}
		}), want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:2", "edns0"}}},
		{name: "dnsConfig is merged after the policy's", d: cluster, pod: testPod(func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"example.com", "b.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("3")}}}
		}), want: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10", "1.1.1.1"},
			Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example.com", "b.example"},
			Options:  []string{"ndots:3"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.d.podDNS(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("podDNS (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodDNSLimits(t *testing.T) {
	d := &dnsConfigurer{log: hclog.NewNullLogger()}
	var searches []string
	for i := range 40 {
		searches = append(searches, fmt.Sprintf("s%02d.example", i))
	}
	tooLong := strings.Repeat("x", 254)
	pod := testPod(func(p *v1.Pod) {
		p.Spec.DNSPolicy = v1.DNSNone
		p.Spec.DNSConfig = &v1.PodDNSConfig{
			Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"},
			Searches:    append([]string{tooLong}, searches...),
		}
	})
	got, err := d.podDNS(pod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, got.Servers); diff != "" {
		t.Errorf("servers cut to 3 (-want +got):\n%s", diff)
	}
	// 32 paths kept first, then the one over 253 characters dropped.
	if diff := cmp.Diff(searches[:31], got.Searches); diff != "" {
		t.Errorf("searches (-want +got):\n%s", diff)
	}

	var long []string
	for i := range 30 {
		long = append(long, fmt.Sprintf("%s.d%02d", strings.Repeat("y", 90), i))
	}
	pod.Spec.DNSConfig = &v1.PodDNSConfig{Searches: long}
	got, err = d.podDNS(pod)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Join(got.Searches, " ")); n > maxDNSSearchListChars || len(got.Searches) != 21 {
		t.Errorf("search line of %d paths, %d characters; want the first 21 paths within %d characters", len(got.Searches), n, maxDNSSearchListChars)
	}
}

func TestPodDNSMissingResolvConf(t *testing.T) {
	d := &dnsConfigurer{resolvConf: filepath.Join(t.TempDir(), "missing"), log: hclog.NewNullLogger()}
	if _, err := d.podDNS(testPod()); err == nil || !strings.Contains(err.Error(), "resolver configuration") {
		t.Errorf("podDNS with a missing resolv.conf: %v, want an error naming the resolver configuration", err)
	}
}

func TestParseResolvConf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    *runtimeapi.DNSConfig
		wantErr bool
	}{
		{name: "empty", in: "", want: &runtimeapi.DNSConfig{}},
		{name: "last search wins, root dropped", in: "search a.example\nsearch b.example . c.example.\n",
			want: &runtimeapi.DNSConfig{Searches: []string{"b.example", "c.example"}}},
		{name: "options merge by name", in: "options ndots:2 rotate\noptions ndots:3\n",
			want: &runtimeapi.DNSConfig{Options: []string{"ndots:3", "rotate"}}},
		{name: "comments and blank lines", in: "# nameserver 1.1.1.1\n\n  nameserver 192.0.2.1 \n",
			want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.1"}}},
		{name: "nameserver without address", in: "nameserver\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseResolvConf(strings.NewReader(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("parseResolvConf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckResolvConfLimits(t *testing.T) {
	dir := t.TempDir()
	many := "search"
	for i := range 30 {
		many += fmt.Sprintf(" s%02d.example", i)
	}
	for _, tc := range []struct {
		name, content, domain, want string
	}{
		{name: "within the limits", content: "nameserver 192.0.2.1\nsearch a.example b.example\n", domain: "cluster.local"},
		{name: "too many paths with a cluster domain", content: many + "\n", domain: "cluster.local",
			want: "contains search line consisting of more than 29 domains!"},
		{name: "the same paths without one", content: many + "\n"},
		{name: "a path too long", content: "search " + strings.Repeat("x", 254) + "\n",
			want: "contains a search path which length is more than allowed 253 chars!"},
		{name: "unreadable", want: "reading the resolver configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rec := record.NewFakeRecorder(10)
			d := &dnsConfigurer{resolvConf: path, clusterDomain: tc.domain, log: hclog.NewNullLogger(), events: rec, nodeRef: events.NodeRef("node-1")}
			d.checkResolvConfLimits()
			got := eventstest.Drain(rec)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("events %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], "Warning CheckLimitsForResolvConf ") || !strings.Contains(got[0], tc.want)):
				t.Errorf("events %q, want one CheckLimitsForResolvConf warning containing %q", got, tc.want)
			}
		})
	}
}
