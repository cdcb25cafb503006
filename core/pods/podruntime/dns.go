package podruntime

import (
	"bufio"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/types"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events"
)

// DNS limits, upstream's (pkg/apis/core/validation/validation.go).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	// maxResolvConfBytes bounds how much of the resolver configuration is
	// read, as upstream's maxResolvConfLength.
	maxResolvConfBytes = 10 << 20
)

// defaultDNSOptions are the options of ClusterFirst pods.
var defaultDNSOptions = []string{"ndots:5"}

// dnsConfigurer makes pods' DNS configuration, as upstream's
// pkg/kubelet/network/dns Configurer.
type dnsConfigurer struct {
	clusterDNS    []net.IP
	clusterDomain string
	resolvConf    string
	nodeIPs       []net.IP
	log           hclog.Logger
	// events gets upstream's MissingClusterDNS (on the pod and the node)
	// and DNSConfigForming, at every sync as upstream: the recorder's spam
	// filter bounds them.
	events  events.Recorder
	nodeRef *v1.ObjectReference
	// warned holds the pods already warned about their DNS: the config is
	// computed at every sync, the warning is worth one line per pod.
	warned sync.Map
}

// warn logs a DNS problem of pod once.
func (d *dnsConfigurer) warn(pod *v1.Pod, msg string, args ...any) {
	if _, seen := d.warned.LoadOrStore(pod.UID, struct{}{}); !seen {
		d.log.Warn(msg, append([]any{"pod", podFullName(pod)}, args...)...)
	}
}

// event records a warning about obj (nil events: none).
func (d *dnsConfigurer) event(obj runtime.Object, reason, message string) {
	events.OrNop(d.events).Event(obj, v1.EventTypeWarning, reason, message)
}

// forget drops a terminated pod.
func (d *dnsConfigurer) forget(uid types.UID) { d.warned.Delete(uid) }

// podDNS is the sandbox DNS configuration for pod's dnsPolicy:
//
//   - ClusterFirst (and ClusterFirstWithHostNet, and ClusterFirst for pods
//     not on the host network): the cluster DNS servers, the cluster search
//     paths before the host's, ndots:5; without cluster DNS servers, like
//     Default;
//   - Default (and ClusterFirst on the host network): the host's
//     resolv.conf, or the node's loopback resolver when there is none;
//   - None: only the pod's dnsConfig.
//
// The pod's dnsConfig is then merged in, and the result cut to the limits.
func (d *dnsConfigurer) podDNS(pod *v1.Pod) (*runtimeapi.DNSConfig, error) {
	config, err := d.hostDNS()
	if err != nil {
		return nil, err
	}
	switch podDNSType(pod) {
	case dnsNone:
		config = &runtimeapi.DNSConfig{}
	case dnsCluster:
		if len(d.clusterDNS) != 0 {
			config.Servers = nil
			for _, ip := range d.clusterDNS {
				config.Servers = append(config.Servers, ip.String())
			}
			config.Searches = d.clusterSearches(config.Searches, pod)
			config.Options = slices.Clone(defaultDNSOptions)
			break
		}
		d.warn(pod, "no cluster DNS server configured: pod falls back to dnsPolicy Default", "dns_policy", pod.Spec.DNSPolicy)
		msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
		d.event(d.nodeRef, "MissingClusterDNS", msg)
		d.event(pod, "MissingClusterDNS", fmt.Sprintf("pod: %q. %s", podFullName(pod), msg))
		fallthrough
	case dnsHost:
		if d.resolvConf == "" {
			for _, ip := range d.nodeIPs {
				if ip.To4() == nil {
					config.Servers = append(config.Servers, "::1")
				} else {
					config.Servers = append(config.Servers, "127.0.0.1")
				}
			}
			if len(config.Servers) == 0 {
				config.Servers = []string{"127.0.0.1"}
			}
			config.Searches = []string{"."}
		}
	}
	if pod.Spec.DNSConfig != nil {
		config.Servers = omitDuplicates(append(config.Servers, pod.Spec.DNSConfig.Nameservers...))
		config.Searches = omitDuplicates(append(config.Searches, pod.Spec.DNSConfig.Searches...))
		config.Options = mergeDNSOptions(config.Options, pod.Spec.DNSConfig.Options)
	}
	d.fitLimits(config, pod)
	return config, nil
}

type dnsType int

const (
	dnsCluster dnsType = iota
	dnsHost
	dnsNone
)

// podDNSType maps a dnsPolicy to where the pod's DNS comes from. Validation
// admits only the four policies; an empty one is ClusterFirst.
func podDNSType(pod *v1.Pod) dnsType {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return dnsNone
	case v1.DNSDefault:
		return dnsHost
	case v1.DNSClusterFirst, "":
		if pod.Spec.HostNetwork {
			return dnsHost
		}
	}
	return dnsCluster
}

// hostDNS is what the resolver configuration file says, empty when none is
// configured.
func (d *dnsConfigurer) hostDNS() (*runtimeapi.DNSConfig, error) {
	if d.resolvConf == "" {
		return &runtimeapi.DNSConfig{}, nil
	}
	f, err := os.Open(d.resolvConf)
	if err != nil {
		return nil, fmt.Errorf("reading the resolver configuration for pods: %w", err)
	}
	defer f.Close()
	config, err := parseResolvConf(io.LimitReader(f, maxResolvConfBytes))
	if err != nil {
		return nil, fmt.Errorf("parsing the resolver configuration %s: %w", d.resolvConf, err)
	}
	return config, nil
}

// checkResolvConfLimits is upstream's CheckLimitsForResolvConf, run once
// as the kubelet's sync loop starts: a node whose resolver configuration
// cannot be read, or whose search line would be cut for every pod (more
// paths than the limit less the three cluster ones, a path over 253
// characters, a line over 2048), gets a CheckLimitsForResolvConf warning.
func (d *dnsConfigurer) checkResolvConfLimits() {
	if d.resolvConf == "" {
		return
	}
	warn := func(msg string) {
		d.log.Warn("the node's resolver configuration is over the limits pods' DNS has", "resolv_conf", d.resolvConf, "problem", msg)
		d.event(d.nodeRef, "CheckLimitsForResolvConf", msg)
	}
	host, err := d.hostDNS()
	if err != nil {
		warn(err.Error())
		return
	}
	limit := maxDNSSearchPaths
	if d.clusterDomain != "" {
		limit -= 3
	}
	if len(host.Searches) > limit {
		warn(fmt.Sprintf("Resolv.conf file '%s' contains search line consisting of more than %d domains!", d.resolvConf, limit))
		return
	}
	for _, s := range host.Searches {
		if len(s) > validation.DNS1123SubdomainMaxLength {
			warn(fmt.Sprintf("Resolv.conf file %q contains a search path which length is more than allowed %d chars!", d.resolvConf, validation.DNS1123SubdomainMaxLength))
			return
		}
	}
	if len(strings.Join(host.Searches, " ")) > maxDNSSearchListChars {
		warn(fmt.Sprintf("Resolv.conf file '%s' contains search line which length is more than allowed %d chars!", d.resolvConf, maxDNSSearchListChars))
	}
}

// parseResolvConf reads the nameserver, search and options lines of a
// resolv.conf, as upstream: the last search line wins, options merge by
// name.
func parseResolvConf(r io.Reader) (*runtimeapi.DNSConfig, error) {
	config := &runtimeapi.DNSConfig{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 4096), maxResolvConfBytes)
	line := 0
	for scanner.Scan() {
		line++
		fields := strings.Fields(scanner.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				return nil, fmt.Errorf("line %d: nameserver without an address", line)
			}
			config.Servers = append(config.Servers, fields[1])
		case "search":
			config.Searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					config.Searches = append(config.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			config.Options = appendDNSOptions(config.Options, fields[1:]...)
		}
	}
	return config, scanner.Err()
}

// clusterSearches are the search paths of a ClusterFirst pod:
// <ns>.svc.<domain>, svc.<domain>, <domain>, then the host's.
func (d *dnsConfigurer) clusterSearches(hostSearches []string, pod *v1.Pod) []string {
	if d.clusterDomain == "" {
		return hostSearches
	}
	return omitDuplicates(append([]string{
		fmt.Sprintf("%s.svc.%s", pod.Namespace, d.clusterDomain),
		"svc." + d.clusterDomain,
		d.clusterDomain,
	}, hostSearches...))
}

// fitLimits cuts the configuration to what resolvers accept, as upstream:
// at most 3 servers, 32 search paths of at most 253 characters, 2048
// characters in all, dropping from the end.
func (d *dnsConfigurer) fitLimits(config *runtimeapi.DNSConfig, pod *v1.Pod) {
	if len(config.Servers) > maxDNSNameservers {
		config.Servers = config.Servers[:maxDNSNameservers]
		d.warn(pod, "nameserver limits were exceeded, some nameservers have been omitted", "applied", strings.Join(config.Servers, " "))
		d.event(pod, "DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "+strings.Join(config.Servers, " "))
	}
	exceeded := false
	if len(config.Searches) > maxDNSSearchPaths {
		config.Searches = config.Searches[:maxDNSSearchPaths]
		exceeded = true
	}
	kept := config.Searches[:0]
	for _, s := range config.Searches {
		if len(s) > validation.DNS1123SubdomainMaxLength {
			exceeded = true
			continue
		}
		kept = append(kept, s)
	}
	config.Searches = kept
	for len(config.Searches) > 0 && len(strings.Join(config.Searches, " ")) > maxDNSSearchListChars {
		config.Searches = config.Searches[:len(config.Searches)-1]
		exceeded = true
	}
	if exceeded {
		d.warn(pod, "search line limits were exceeded, some search paths have been omitted", "applied", strings.Join(config.Searches, " "))
		d.event(pod, "DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "+strings.Join(config.Searches, " "))
	}
}

func omitDuplicates(items []string) []string {
	seen := make(map[string]bool, len(items))
	out := items[:0:0]
	for _, s := range items {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// appendDNSOptions adds resolver options, a later one replacing an earlier
// one of the same name ("ndots:2" replaces "ndots:5"). Upstream merges
// through a map and so orders options at random; microlet keeps the order
// they were first given in.
func appendDNSOptions(options []string, more ...string) []string {
	out := slices.Clone(options)
	for _, o := range more {
		name, _, _ := strings.Cut(o, ":")
		if i := slices.IndexFunc(out, func(e string) bool { n, _, _ := strings.Cut(e, ":"); return n == name }); i >= 0 {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}

// mergeDNSOptions adds a pod's dnsConfig options to existing ones.
func mergeDNSOptions(existing []string, options []v1.PodDNSConfigOption) []string {
	more := make([]string, 0, len(options))
	for _, o := range options {
		if o.Value != nil && *o.Value != "" {
			more = append(more, o.Name+":"+*o.Value)
		} else {
			more = append(more, o.Name)
		}
	}
	return appendDNSOptions(existing, more...)
}
