package podruntime

import (
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/internal/prereq"
)

func TestHostsFileContent(t *testing.T) {
	aliases := func(p *v1.Pod) {
		p.Spec.HostAliases = []v1.HostAlias{
			{IP: "192.0.2.1", Hostnames: []string{"db", "db.local"}},
			{IP: "192.0.2.2", Hostnames: []string{"cache"}},
		}
	}
	got, err := hostsFileContent(testPod(aliases), []string{"10.88.0.5", "fd00::5"}, "web", "sub.default.svc.cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	want := `# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
10.88.0.5	web.sub.default.svc.cluster.local	web
fd00::5	web.sub.default.svc.cluster.local	web

# Entries added by HostAliases.
192.0.2.1	db	db.local
192.0.2.2	cache
`
	if string(got) != want {
		t.Errorf("hosts file:\n%s\nwant:\n%s", got, want)
	}

	got, err = hostsFileContent(testPod(), []string{"10.88.0.5"}, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(got), "fe00::2\tip6-allrouters\n10.88.0.5\tweb\n") {
		t.Errorf("hosts file without a domain:\n%s", got)
	}
}

func TestHostsFileContentHostNetwork(t *testing.T) {
	node, err := os.ReadFile(nodeHostsPath)
	if err != nil {
		prereq.Missing(t, "no node hosts file to compare with: %v", err)
	}
	got, err := hostsFileContent(testPod(withHostNetwork, func(p *v1.Pod) {
		p.Spec.HostAliases = []v1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"db"}}}
	}), []string{"192.0.2.10"}, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file (host network).\n" + string(node) + "\n# Entries added by HostAliases.\n192.0.2.1\tdb\n"
	if string(got) != want {
		t.Errorf("hostNetwork hosts file:\n%s\nwant:\n%s", got, want)
	}
}
