package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/microlet/microlet/core/logging"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/sysctls"
	"github.com/microlet/microlet/core/runtime/logrotation"
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

type validator struct {
	c    *Config
	errs Errors
}

// fail reports a problem with key, placed where the key was last set.
func (v *validator) fail(key, format string, args ...any) {
	pos, _ := v.c.Position(key)
	v.errs = append(v.errs, &Error{Position: pos, Key: key, Message: fmt.Sprintf(format, args...)})
}

// set reports whether a source set key; a value derived from another key
// is checked through that key instead.
func (v *validator) set(key string) bool {
	_, ok := v.c.Position(key)
	return ok
}

// validate checks values against each other and against what they mean.
func (c *Config) validate() Errors {
	v := &validator{c: c}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		v.fail("log_level", "%v", err)
	}
	v.oneOf("cgroup_driver", c.CgroupDriver, "cgroupfs", "systemd")
	if c.CgroupDriver == "systemd" {
		// The kubelet's other driver is a known name, refused here so that
		// `microlet config validate` says what the agent's start would.
		v.fail("cgroup_driver", `"systemd" is not supported yet: microlet manages cgroups with the cgroupfs driver only; set cgroup_driver = "cgroupfs" and configure the runtime likewise (containerd: SystemdCgroup = false)`)
	}
	v.positiveDurations()
	v.atLeast("max_pods", c.MaxPods, 0)
	v.atLeast("eviction_max_pods_per_cycle", c.EvictionMaxPodsPerCycle, 1)
	v.atLeast("max_parallel_image_pulls", c.MaxParallelImagePulls, 0)
	if c.SerializeImagePulls && c.MaxParallelImagePulls > 1 {
		// The kubelet refuses it too, rather than ignore one of them.
		v.fail("max_parallel_image_pulls", "cannot be larger than 1 unless serialize_image_pulls is false, got %d", c.MaxParallelImagePulls)
	}
	if c.ImageCredentialProviderConfig != "" && c.ImageCredentialProviderBinDir == "" {
		v.fail("image_credential_provider_config", "needs image_credential_provider_bin_dir: the plugins it names are found there")
	}
	if _, err := sysctls.NewAllowlist(c.AllowedUnsafeSysctls); err != nil {
		v.fail("allowed_unsafe_sysctls", "%v", err)
	}
	v.containerLogs()
	v.shutdown()
	if c.CNIBridgeConfig && c.PodCIDR == "" {
		v.fail("cni_bridge_config", "needs pod_cidr: the bridge network's addresses come from it")
	}
	for i, dir := range c.CNIBinDirs {
		if !filepath.IsAbs(dir) {
			v.fail("cni_bin_dirs", "expected absolute paths, got %q at index %d", dir, i)
		}
	}
	v.atLeast("gomaxprocs", c.GOMAXPROCS, 0)
	v.atLeast("plugin_host.health_failures", c.PluginHost.HealthFailures, 1)
	v.atLeast("plugin_host.restart_budget", c.PluginHost.RestartBudget, 0)
	for _, p := range []struct {
		key  string
		port int
	}{{"healthz_port", c.HealthzPort}, {"port", c.Port}, {"read_only_port", c.ReadOnlyPort}} {
		if p.port != 0 && len(validation.IsValidPortNum(p.port)) > 0 {
			v.fail(p.key, "expected 0 (disabled) or a port from 1 to 65535, got %d", p.port)
		}
	}
	v.nodeAPI()
	if h := c.PluginHost; h.RestartBackoff > h.RestartBackoffMax {
		key := "plugin_host.restart_backoff"
		if !v.set(key) {
			key = "plugin_host.restart_backoff_max"
		}
		v.fail(key, "restart_backoff (%s) exceeds restart_backoff_max (%s)", h.RestartBackoff, h.RestartBackoffMax)
	}

	for _, p := range []struct{ key, path string }{
		{"root_dir", c.RootDir}, {"pod_logs_dir", c.PodLogsDir}, {"plugin_dir", c.PluginDir}, {"cgroup_root", c.CgroupRoot},
		{"node_log_dir", c.NodeLogDir},
	} {
		v.absolutePath(p.key, p.path)
	}
	for _, p := range []struct{ key, path string }{
		{"static_pod_path", c.StaticPodPath}, {"resolv_conf", c.ResolvConf}, {"pod_push_socket", c.PodPushSocket},
		{"container_logs_dir", c.ContainerLogsDir}, {"cni_conf_dir", c.CNIConfDir}, {"cert_dir", c.CertDir},
		{"tls_cert_file", c.TLSCertFile}, {"tls_private_key_file", c.TLSPrivateKeyFile}, {"kubeconfig", c.Kubeconfig},
		{"authentication.x509.client_ca_file", c.Authentication.X509.ClientCAFile},
		{"image_credential_provider_config", c.ImageCredentialProviderConfig},
		{"image_credential_provider_bin_dir", c.ImageCredentialProviderBinDir},
	} {
		if p.path != "" && v.set(p.key) {
			v.absolutePath(p.key, p.path)
		}
	}
	v.endpoint("container_runtime_endpoint", c.ContainerRuntimeEndpoint)
	if v.set("image_service_endpoint") {
		v.endpoint("image_service_endpoint", c.ImageServiceEndpoint)
	}

	v.nodeName()
	if c.ClusterDomain != "" && len(validation.IsDNS1123Subdomain(c.ClusterDomain)) > 0 {
		v.fail("cluster_domain", "expected a lowercase DNS domain such as \"cluster.local\", got %q", c.ClusterDomain)
	}
	v.dualStack("node_ip", c.NodeIP, "IP address", addrIs4)
	v.dualStack("pod_cidr", c.PodCIDR, "CIDR", prefixIs4)
	for i, ip := range c.ClusterDNS {
		if _, err := netip.ParseAddr(ip); err != nil {
			v.fail("cluster_dns", "expected IP addresses, got %q at index %d", ip, i)
		}
	}
	for _, a := range []struct{ key, addr string }{{"healthz_bind_address", c.HealthzBindAddress}, {"address", c.Address}} {
		if _, err := netip.ParseAddr(a.addr); err != nil {
			v.fail(a.key, "expected an IP address, got %q", a.addr)
		}
	}
	v.staticPodURL()
	v.cluster()
	v.plugins()
	return v.errs
}

// cluster checks the keys of a cluster node.
func (v *validator) cluster() {
	c := v.c
	v.atLeast("kube_api_qps", c.KubeAPIQPS, 1)
	v.atLeast("kube_api_burst", c.KubeAPIBurst, 1)
	v.atLeast("node_lease_duration_seconds", c.NodeLeaseDurationSeconds, 1)
	v.oneOf("kube_api_content_type", c.KubeAPIContentType, "application/vnd.kubernetes.protobuf", "application/json")
	if c.BootstrapKubeconfig != "" && c.Kubeconfig == "" {
		v.fail("bootstrap_kubeconfig", "needs kubeconfig: the path where the bootstrapped kubeconfig is written")
	}
	if c.NodeStatusReportFrequency < c.NodeStatusUpdateFrequency {
		v.fail("node_status_report_frequency", "expected at least node_status_update_frequency (%s), got %s", c.NodeStatusUpdateFrequency, c.NodeStatusReportFrequency)
	}
	for _, key := range sortedKeys(c.NodeLabels) {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			v.fail("node_labels", "label %q: %s", key, strings.Join(errs, "; "))
			continue
		}
		if errs := validation.IsValidLabelValue(c.NodeLabels[key]); len(errs) > 0 {
			v.fail("node_labels", "label %s=%q: %s", key, c.NodeLabels[key], strings.Join(errs, "; "))
		}
		// As the kubelet: a node may not give itself labels in the
		// kubernetes.io and k8s.io namespaces beyond the allowed ones,
		// since the NodeRestriction admission plugin would refuse them.
		if ns, _, ok := strings.Cut(key, "/"); ok && isKubernetesNamespace(ns) && !kubeletapis.IsKubeletLabel(key) {
			v.fail("node_labels", "label %q is in the %s namespace and not one a node may set (allowed: %s and the prefixes %s)",
				key, ns, strings.Join(kubeletapis.KubeletLabels(), ", "), strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "))
		}
	}
	for i, taint := range c.RegisterWithTaints {
		if _, err := ParseTaint(taint); err != nil {
			v.fail("register_with_taints", "at index %d: %v", i, err)
		}
	}
}

func isKubernetesNamespace(ns string) bool {
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// nodeAPI checks the node API's listeners, TLS and authorization.
func (v *validator) nodeAPI() {
	c := v.c
	ports := map[int]string{}
	for _, p := range []struct {
		key  string
		port int
	}{{"healthz_port", c.HealthzPort}, {"port", c.Port}, {"read_only_port", c.ReadOnlyPort}} {
		if p.port == 0 {
			continue
		}
		if other, ok := ports[p.port]; ok {
			v.fail(p.key, "port %d is also %s; each listener needs its own port", p.port, other)
		}
		ports[p.port] = p.key
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		key := "tls_cert_file" // where the one that is set was set
		if c.TLSCertFile == "" {
			key = "tls_private_key_file"
		}
		v.fail(key, "tls_cert_file and tls_private_key_file go together: set both, or neither for a self-signed pair in cert_dir")
	}
	if c.TLSMinVersion != "" {
		if _, err := cliflag.TLSVersion(c.TLSMinVersion); err != nil {
			v.fail("tls_min_version", "expected one of %s, got %q", strings.Join(cliflag.TLSPossibleVersions(), ", "), c.TLSMinVersion)
		}
	}
	for i, name := range c.TLSCipherSuites {
		if _, err := cliflag.TLSCipherSuites([]string{name}); err != nil {
			v.fail("tls_cipher_suites", "expected IANA cipher suite names such as \"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\", got %q at index %d", name, i)
		}
	}
	v.oneOf("authorization.mode", c.Authorization.Mode, "AlwaysAllow", "Webhook")
	// Webhook authorization asks the API server; without one nobody who
	// authenticates could be allowed anything, which is a mistake rather
	// than a policy.
	canAuthenticate := c.Authentication.X509.ClientCAFile != "" || c.Authentication.Anonymous.Enabled
	if c.Port != 0 && c.Authorization.Mode == "Webhook" && c.Kubeconfig == "" && canAuthenticate {
		key := "authorization.mode"
		if !v.set(key) {
			key = "kubeconfig"
		}
		v.fail(key, "authorization mode Webhook asks the API server, and no kubeconfig is set: set kubeconfig, or authorization.mode = \"AlwaysAllow\"")
	}
}

func (v *validator) oneOf(key, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		v.fail(key, "expected one of %s, got %q", strings.Join(allowed, ", "), value)
	}
}

func (v *validator) atLeast(key string, value, lowest int) {
	if value < lowest {
		v.fail(key, "expected a whole number of at least %d, got %d", lowest, value)
	}
}

// positiveDurations checks that every duration key is above zero, or zero
// where zero turns something off (zeroDurations).
func (v *validator) positiveDurations() {
	cv := reflect.ValueOf(v.c).Elem()
	for _, f := range agentSchema.fields {
		if f.kind != valueKinds[reflect.TypeFor[time.Duration]()] {
			continue
		}
		if d := time.Duration(cv.FieldByIndex(f.index).Int()); d < 0 || d == 0 && !zeroDurations[f.key] {
			v.fail(f.key, "expected a positive duration, got %q", d.String())
		}
	}
}

func (v *validator) absolutePath(key, path string) {
	if !filepath.IsAbs(path) {
		v.fail(key, "expected an absolute path, got %q", path)
	}
}

// endpoint checks a CRI endpoint; on Linux the kubelet speaks CRI over unix
// sockets only.
func (v *validator) endpoint(key, endpoint string) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" || u.Host != "" || !filepath.IsAbs(u.Path) {
		v.fail(key, "expected a unix socket endpoint such as \"unix:///run/containerd/containerd.sock\", got %q", endpoint)
	}
}

func (v *validator) nodeName() {
	name := v.c.NodeName
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return
	}
	msg := fmt.Sprintf("expected a lowercase RFC 1123 subdomain (letters, digits, '-' and '.'), got %q", name)
	if !v.set("node_name") {
		msg += " from the host name; set node_name or --hostname-override"
	}
	v.fail("node_name", "%s", msg)
}

func addrIs4(s string) (bool, bool) {
	a, err := netip.ParseAddr(s)
	return a.Is4(), err == nil
}

func prefixIs4(s string) (bool, bool) {
	p, err := netip.ParsePrefix(s)
	return p.Addr().Is4(), err == nil
}

// dualStack checks one address (or CIDR), or an IPv4 and an IPv6 one
// separated by a comma, as the kubelet's --node-ip.
func (v *validator) dualStack(key, value, what string, is4 func(string) (bool, bool)) {
	if value == "" {
		return
	}
	parts := strings.Split(value, ",")
	families := make([]bool, len(parts))
	for i, part := range parts {
		four, ok := is4(strings.TrimSpace(part))
		if !ok {
			v.fail(key, "expected an %s, got %q", what, part)
			return
		}
		families[i] = four
	}
	if len(parts) > 2 || (len(parts) == 2 && families[0] == families[1]) {
		v.fail(key, "expected one %s, or an IPv4 and an IPv6 one separated by a comma, got %q", what, value)
	}
}

func (v *validator) staticPodURL() {
	if raw := v.c.StaticPodURL; raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail("static_pod_url", "expected an http or https URL, got %q", raw)
		}
	}
	headers := v.c.StaticPodURLHeader
	for _, name := range sortedKeys(headers) {
		if !httpguts.ValidHeaderFieldName(name) {
			v.fail("static_pod_url_header", "expected HTTP header names, got %q", name)
		}
		for _, value := range headers[name] {
			if !httpguts.ValidHeaderFieldValue(value) {
				v.fail("static_pod_url_header", "header %q: value contains characters HTTP does not allow", name)
			}
		}
	}
}

func (v *validator) plugins() {
	byKind := map[string][]*Plugin{}
	for i := range v.c.Plugins {
		p := &v.c.Plugins[i]
		byKind[p.Kind] = append(byKind[p.Kind], p)
		key := joinKey(joinKey(pluginKey, p.Kind), p.Name)
		if p.SHA256 != "" && !sha256Hex.MatchString(p.SHA256) {
			v.fail(key+".sha256", "expected 64 hexadecimal characters, got %q", p.SHA256)
		}
		if strings.ContainsRune(p.Binary, '/') || p.Binary == "." || p.Binary == ".." {
			v.fail(key+".binary", "expected a file name in plugin_dir, without '/', got %q", p.Binary)
		}
		for _, name := range sortedKeys(p.Env) {
			switch {
			case name == "" || strings.ContainsAny(name, "=\x00"):
				v.fail(key+".env", "expected environment variable names, got %q", name)
			case envReserved[name]:
				v.fail(key+".env", "%s is set by the plugin host for every plugin and cannot be overridden", name)
			}
		}
	}
	for _, kind := range sortedKeys(byKind) {
		plugins := byKind[kind]
		// A kind with a slot per name may have several blocks.
		if info, known := pluginhost.Kind(kind).Info(); len(plugins) < 2 || known && !info.Singleton {
			continue
		}
		found := make([]string, len(plugins))
		for i, p := range plugins {
			found[i] = fmt.Sprintf("%q (%s)", p.Name, p.Position)
		}
		v.errs = append(v.errs, &Error{
			Position: plugins[1].Position,
			Key:      joinKey(pluginKey, kind),
			Message:  fmt.Sprintf("at most one %s plugin may be configured, found %s", kind, strings.Join(found, ", ")),
		})
	}
}

// containerLogs checks log rotation's keys as the kubelet does.
func (v *validator) containerLogs() {
	c := v.c
	if _, err := logrotation.ParseMaxSize(c.ContainerLogMaxSize); err != nil {
		v.fail("container_log_max_size", "expected a quantity such as \"10Mi\": %v", err)
	}
	v.atLeast("container_log_max_files", c.ContainerLogMaxFiles, 2)
	v.atLeast("container_log_max_workers", c.ContainerLogMaxWorkers, 1)
	if c.ContainerLogMonitorInterval < 3*time.Second {
		v.fail("container_log_monitor_interval", "expected at least 3s, got %s", c.ContainerLogMonitorInterval)
	}
}
