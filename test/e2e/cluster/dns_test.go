//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// TestDNSAndHosts: on a node with cluster_dns, cluster_domain and a
// resolv_conf of four servers, each dnsPolicy gives the resolv.conf
// upstream gives, read inside the container: ClusterFirst the cluster
// server, the cluster search paths before the host's and ndots:5 (also
// ClusterFirstWithHostNet on the host network); Default, and ClusterFirst
// on the host network, the host's file cut to three servers (with the
// DNSConfigForming event); None only the pod's dnsConfig. The
// kubelet-managed /etc/hosts holds the pod's address under its hostname
// and subdomain FQDN and the hostAliases (a hostNetwork pod's, the node's
// file and its hostAliases), and setHostnameAsFQDN makes the FQDN the
// kernel's hostname.
func TestDNSAndHosts(t *testing.T) {
	t.Parallel()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("# the node's resolver\nnameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nnameserver 192.0.2.4\nsearch example.test\noptions timeout:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, nodeOptions{Settings: map[string]string{
		"cluster_dns":    `["10.0.0.10"]`,
		"cluster_domain": `"cluster.local"`,
		"resolv_conf":    quote(resolv),
	}})
	waitReady(t, n, "")
	ns := testNamespace(t)
	ctx := context.Background()
	admin := cluster(t).Admin
	aliases := []v1.HostAlias{{IP: "192.0.2.7", Hostnames: []string{"foo.test", "bar.test"}}}
	pods := map[string]func(*v1.PodSpec){
		"cluster-first": func(s *v1.PodSpec) {
			s.DNSPolicy, s.Hostname, s.Subdomain, s.HostAliases = v1.DNSClusterFirst, "h1", "sub", aliases
		},
		"fqdn": func(s *v1.PodSpec) {
			s.Hostname, s.Subdomain, s.SetHostnameAsFQDN = "h2", "sub", ptr.To(true)
		},
		"default": func(s *v1.PodSpec) { s.DNSPolicy = v1.DNSDefault },
		"hostnet-cluster": func(s *v1.PodSpec) {
			s.DNSPolicy, s.HostNetwork, s.HostAliases = v1.DNSClusterFirstWithHostNet, true, aliases
		},
		"hostnet-clusterfirst": func(s *v1.PodSpec) { s.DNSPolicy, s.HostNetwork = v1.DNSClusterFirst, true },
		"none": func(s *v1.PodSpec) {
			s.DNSPolicy = v1.DNSNone
			s.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"a.test"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}}
		},
	}
	created := map[string]*v1.Pod{}
	for name, change := range pods {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "3600"}})
		change(&spec)
		p, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[name] = p
	}
	running := map[string]*v1.Pod{}
	for name := range pods {
		running[name] = waitAPIPod(t, n, ns, name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}

	clusterResolv := fmt.Sprintf("search %s.svc.cluster.local svc.cluster.local cluster.local example.test\nnameserver 10.0.0.10\noptions ndots:5\n", ns)
	host := "search example.test\nnameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\noptions timeout:2\n"
	for name, want := range map[string]string{
		"cluster-first":        clusterResolv,
		"fqdn":                 clusterResolv,
		"hostnet-cluster":      clusterResolv,
		"default":              host,
		"hostnet-clusterfirst": host,
		"none":                 "search a.test\nnameserver 192.0.2.53\noptions ndots:2 edns0\n",
	} {
		if got := execIn(t, n, running[name].UID, "cat", "/etc/resolv.conf"); got != want {
			t.Errorf("pod %s: resolv.conf\n%s\nwant\n%s", name, got, want)
		}
	}
	waitForReasons(t, n, "the default pod's events", podEvents(t, created["default"]), "DNSConfigForming")

	ip := running["cluster-first"].Status.PodIP
	wantHosts := "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		fmt.Sprintf("%s\th1.sub.%s.svc.cluster.local\th1\n", ip, ns) +
		"\n# Entries added by HostAliases.\n192.0.2.7\tfoo.test\tbar.test\n"
	if got := execIn(t, n, running["cluster-first"].UID, "cat", "/etc/hosts"); got != wantHosts {
		t.Errorf("cluster-first: /etc/hosts\n%s\nwant\n%s", got, wantHosts)
	}
	if got := execIn(t, n, running["cluster-first"].UID, "cat", "/proc/sys/kernel/hostname"); got != "h1\n" {
		t.Errorf("cluster-first: hostname %q, want h1", got)
	}
	if got, want := execIn(t, n, running["fqdn"].UID, "cat", "/proc/sys/kernel/hostname"), fmt.Sprintf("h2.sub.%s.svc.cluster.local\n", ns); got != want {
		t.Errorf("fqdn: hostname %q, want the FQDN %q", got, want)
	}
	nodeHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	wantHosts = "# Kubernetes-managed hosts file (host network).\n" + string(nodeHosts) + "\n# Entries added by HostAliases.\n192.0.2.7\tfoo.test\tbar.test\n"
	if got := execIn(t, n, running["hostnet-cluster"].UID, "cat", "/etc/hosts"); got != wantHosts {
		t.Errorf("hostnet-cluster: /etc/hosts\n%s\nwant\n%s", got, wantHosts)
	}
}
