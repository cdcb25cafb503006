package config

import (
	"strconv"
	"time"
)

// Config is the agent's effective configuration. The config tag is the key's
// name in HCL; nested structs are blocks.
type Config struct {
	// NodeName is the node's name: after Load, the host name lowercased
	// unless set (--hostname-override).
	NodeName   string `config:"node_name"`
	RootDir    string `config:"root_dir"`
	PodLogsDir string `config:"pod_logs_dir"`
	// ContainerLogsDir gets the kubelet's /var/log/containers symlinks to
	// container logs (log shippers read them); "" makes none.
	ContainerLogsDir string `config:"container_logs_dir"`
	// ContainerLogMaxSize is the size (a quantity, "10Mi") at which a
	// running container's log is rotated; negative turns rotation off.
	// ContainerLogMaxFiles bounds a log's files, the live one included.
	ContainerLogMaxSize  string `config:"container_log_max_size"`
	ContainerLogMaxFiles int    `config:"container_log_max_files"`
	// ContainerLogMonitorInterval is how often logs are checked;
	// ContainerLogMaxWorkers how many containers are rotated at once.
	ContainerLogMonitorInterval time.Duration `config:"container_log_monitor_interval"`
	ContainerLogMaxWorkers      int           `config:"container_log_max_workers"`
	// LogLevel is one of trace, debug, info, warn, error.
	LogLevel string `config:"log_level"`
	LogJSON  bool   `config:"log_json"`
	// GOMAXPROCS is the number of Ps the agent runs with; 0 leaves Go's
	// default (GOMAXPROCS environment variable or the CPU count).
	GOMAXPROCS               int           `config:"gomaxprocs"`
	PluginDir                string        `config:"plugin_dir"`
	ContainerRuntimeEndpoint string        `config:"container_runtime_endpoint"`
	ImageServiceEndpoint     string        `config:"image_service_endpoint"` // after Load: the runtime endpoint unless set
	RuntimeRequestTimeout    time.Duration `config:"runtime_request_timeout"`
	StaticPodPath            string        `config:"static_pod_path"`
	StaticPodURL             string        `config:"static_pod_url"`
	// StaticPodURLHeader maps a header name to its values.
	StaticPodURLHeader map[string][]string `config:"static_pod_url_header"`
	FileCheckFrequency time.Duration       `config:"file_check_frequency"`
	HTTPCheckFrequency time.Duration       `config:"http_check_frequency"`
	SyncFrequency      time.Duration       `config:"sync_frequency"`
	MaxPods            int                 `config:"max_pods"`
	// SerializeImagePulls pulls one image at a time; false, as many at
	// once as MaxParallelImagePulls allows (0: no limit). The kubelet's
	// fields, and its refusal of both serialized and more than 1.
	SerializeImagePulls   bool `config:"serialize_image_pulls"`
	MaxParallelImagePulls int  `config:"max_parallel_image_pulls"`
	// ImageCredentialProviderConfig is the kubelet's credential provider
	// config file (CredentialProviderConfig) of exec plugins found in
	// ImageCredentialProviderBinDir; "": none.
	ImageCredentialProviderConfig string `config:"image_credential_provider_config"`
	ImageCredentialProviderBinDir string `config:"image_credential_provider_bin_dir"`
	// CNIConfDir is where the node's CNI network config lives and
	// CNIBinDirs where its plugins are: the core checks them to report
	// network readiness with a precise reason.
	CNIConfDir string   `config:"cni_conf_dir"`
	CNIBinDirs []string `config:"cni_bin_dirs"`
	// CNIBridgeConfig writes a bridge network for pod_cidr into
	// cni_conf_dir when it holds no network (as kubenet did).
	CNIBridgeConfig bool `config:"cni_bridge_config"`
	// NodeIP is one address, or an IPv4 and an IPv6 address separated by a
	// comma, as the kubelet's --node-ip.
	NodeIP        string   `config:"node_ip"`
	PodCIDR       string   `config:"pod_cidr"`
	ClusterDNS    []string `config:"cluster_dns"`
	ClusterDomain string   `config:"cluster_domain"`
	ResolvConf    string   `config:"resolv_conf"`
	// AllowedUnsafeSysctls are sysctls (names or prefixes ending in "*")
	// pods may set beyond the safe ones, as the kubelet's field.
	AllowedUnsafeSysctls []string `config:"allowed_unsafe_sysctls"`
	// SeccompDefault runs containers without a seccomp profile under the
	// runtime's default instead of Unconfined, as the kubelet's field.
	SeccompDefault bool `config:"seccomp_default"`
	// PodPushSocket is the unix socket of the HTTP push pod source; after
	// Load, <root_dir>/pods.sock unless set.
	PodPushSocket      string `config:"pod_push_socket"`
	HealthzBindAddress string `config:"healthz_bind_address"`
	// HealthzPort 0 disables the healthz endpoint, as in the kubelet.
	HealthzPort int `config:"healthz_port"`

	// Address and Port are the node API's HTTPS listener (authenticated and
	// authorized); port 0 disables it.
	Address string `config:"address"`
	Port    int    `config:"port"`
	// ReadOnlyPort serves the read-only endpoints over plain HTTP without
	// authentication; 0 (the default) disables it.
	ReadOnlyPort int `config:"read_only_port"`
	// TLSCertFile and TLSPrivateKeyFile are the node API's serving pair;
	// when unset a self-signed pair is made in CertDir on first start.
	TLSCertFile       string `config:"tls_cert_file"`
	TLSPrivateKeyFile string `config:"tls_private_key_file"`
	// CertDir holds the self-signed pair; after Load, <root_dir>/pki unless set.
	CertDir string `config:"cert_dir"`
	// TLSMinVersion is a Go TLS version name ("VersionTLS12"); empty: Go's default.
	TLSMinVersion string `config:"tls_min_version"`
	// TLSCipherSuites are IANA cipher suite names; empty: Go's defaults.
	TLSCipherSuites []string `config:"tls_cipher_suites"`
	// EnableDebuggingHandlers serves exec, attach, port-forward, run,
	// container logs, /logs and /runningpods; off, they answer 405.
	EnableDebuggingHandlers bool `config:"enable_debugging_handlers"`
	// EnableProfilingHandler serves Go's profiles on /debug/pprof/ while
	// the debugging handlers are on; off, it answers 405.
	EnableProfilingHandler bool `config:"enable_profiling_handler"`
	// EnableContentionProfiling records every blocking event for
	// /debug/pprof/block (runtime.SetBlockProfileRate(1)) while the
	// profiling handler is served; it costs time on every contended lock.
	EnableContentionProfiling bool `config:"enable_contention_profiling"`
	// EnableDebugFlagsHandler serves PUT /debug/flags/v, which sets the log
	// level from a klog verbosity, while the debugging handlers are on.
	EnableDebugFlagsHandler bool `config:"enable_debug_flags_handler"`
	// NodeLogDir is the directory /logs/ serves.
	NodeLogDir string `config:"node_log_dir"`
	// Kubeconfig reaches the API server. Set, the node is a cluster node:
	// it registers, reports status and a lease, runs the API server's pods
	// for it, and reviews tokens and access there. Unset, it is standalone.
	Kubeconfig string `config:"kubeconfig"`
	// BootstrapKubeconfig is used for TLS bootstrapping when kubeconfig does
	// not exist yet: the node asks for a client certificate with a CSR and
	// writes kubeconfig from what the API server issues.
	BootstrapKubeconfig string `config:"bootstrap_kubeconfig"`
	// RotateCertificates asks for a new client certificate before the
	// current one expires.
	RotateCertificates bool `config:"rotate_certificates"`
	// ServerTLSBootstrap gets the node API's serving certificate from a
	// kubernetes.io/kubelet-serving CSR instead of a self-signed pair.
	ServerTLSBootstrap bool `config:"server_tls_bootstrap"`
	// KubeAPIQPS and KubeAPIBurst bound the requests to the API server
	// (client-go's token bucket).
	KubeAPIQPS   int `config:"kube_api_qps"`
	KubeAPIBurst int `config:"kube_api_burst"`
	// KubeAPIContentType is the wire format of requests to the API server.
	KubeAPIContentType string `config:"kube_api_content_type"`
	// RegisterNode creates (or reconciles) the Node object; off, the node
	// only runs pods and reports status for a Node someone else made.
	RegisterNode bool `config:"register_node"`
	// NodeLabels are added to the Node at registration; kubernetes.io and
	// k8s.io labels only within the kubelet's allowed set.
	NodeLabels map[string]string `config:"node_labels"`
	// RegisterWithTaints are taints given to the Node at registration,
	// each "key[=value]:Effect".
	RegisterWithTaints []string `config:"register_with_taints"`
	// NodeStatusUpdateFrequency is how often node status is computed;
	// NodeStatusReportFrequency how often it is posted when nothing changed.
	NodeStatusUpdateFrequency time.Duration `config:"node_status_update_frequency"`
	NodeStatusReportFrequency time.Duration `config:"node_status_report_frequency"`
	// NodeLeaseDurationSeconds is the Lease's duration; it is renewed every
	// quarter of it (10 s for the default 40).
	NodeLeaseDurationSeconds int `config:"node_lease_duration_seconds"`

	Authentication Authentication `config:"authentication"`
	Authorization  Authorization  `config:"authorization"`

	CgroupDriver string `config:"cgroup_driver"` // cgroupfs; systemd is refused until it exists
	CgroupRoot   string `config:"cgroup_root"`
	// EvictionMonitoringInterval is the period of eviction cycles (the
	// kubelet's evictionMonitoringPeriod).
	EvictionMonitoringInterval time.Duration `config:"eviction_monitoring_interval"`
	// CPUManagerReconcilePeriod is how often running containers' cpusets
	// are checked against the CPU manager's state (the kubelet's
	// cpuManagerReconcilePeriod); the policy is the cgroup plugin's.
	CPUManagerReconcilePeriod time.Duration `config:"cpu_manager_reconcile_period"`
	// EvictionMaxPodsPerCycle bounds the pods evicted in one cycle, whatever
	// the eviction plugin asks (the kubelet evicts one).
	EvictionMaxPodsPerCycle int `config:"eviction_max_pods_per_cycle"`
	// KernelMemcgNotification starts an eviction cycle at once when the
	// kernel reports memory pressure (memcg thresholds on cgroup v1, PSI and
	// memory.events on v2), instead of at the next periodic cycle.
	KernelMemcgNotification bool `config:"kernel_memcg_notification"`
	// EvictionPressurePollInterval is how often the eviction manager reads
	// memory pressure stall averages while the eviction strategy asks to be
	// woken at a level (the psi strategy); 0 never.
	EvictionPressurePollInterval time.Duration `config:"eviction_pressure_poll_interval"`
	// ShutdownGracePeriod is how long the node's shutdown is held back
	// (a logind delay inhibitor lock) to stop its pods; 0 leaves
	// shutdown unhandled. ShutdownGracePeriodCriticalPods is the critical
	// pods' part of it, after the others'. ShutdownGracePeriodByPodPriority
	// replaces both: pod priority (a whole number) to the grace period of
	// the pods from that priority up to the next one's (shutdown.go).
	ShutdownGracePeriod              time.Duration     `config:"shutdown_grace_period"`
	ShutdownGracePeriodCriticalPods  time.Duration     `config:"shutdown_grace_period_critical_pods"`
	ShutdownGracePeriodByPodPriority map[string]string `config:"shutdown_grace_period_by_pod_priority"`

	PluginHost PluginHost `config:"plugin_host"`
	// Plugins are the plugin "<kind>" "<name>" blocks, sorted by kind, then name.
	Plugins []Plugin `config:"-"`

	positions map[string]Position
}

// PluginHost is how the core runs and supervises plugin processes.
type PluginHost struct {
	StartTimeout      time.Duration `config:"start_timeout"`
	CallTimeout       time.Duration `config:"call_timeout"`
	HealthInterval    time.Duration `config:"health_interval"`
	HealthTimeout     time.Duration `config:"health_timeout"`
	HealthFailures    int           `config:"health_failures"`
	RestartBackoff    time.Duration `config:"restart_backoff"`
	RestartBackoffMax time.Duration `config:"restart_backoff_max"`
	// RestartBudget restarts within RestartWindow are allowed before a
	// plugin is disabled.
	RestartBudget  int           `config:"restart_budget"`
	RestartWindow  time.Duration `config:"restart_window"`
	DrainTimeout   time.Duration `config:"drain_timeout"`
	WatchPluginDir bool          `config:"watch_plugin_dir"`
}

// Authentication is how the node API tells who sends a request, the
// kubelet's KubeletAuthentication.
type Authentication struct {
	X509      X509Authentication      `config:"x509"`
	Webhook   WebhookAuthentication   `config:"webhook"`
	Anonymous AnonymousAuthentication `config:"anonymous"`
}

// X509Authentication authenticates client certificates.
type X509Authentication struct {
	// ClientCAFile is a PEM bundle of the CAs whose client certificates
	// authenticate: the common name is the user, organizations its groups.
	ClientCAFile string `config:"client_ca_file"`
}

// WebhookAuthentication reviews bearer tokens with the API server.
type WebhookAuthentication struct {
	// Enabled takes effect with kubeconfig.
	Enabled  bool          `config:"enabled"`
	CacheTTL time.Duration `config:"cache_ttl"`
}

// AnonymousAuthentication lets requests without credentials in as
// system:anonymous.
type AnonymousAuthentication struct {
	Enabled bool `config:"enabled"`
}

// Authorization is how the node API decides what an identity may do, the
// kubelet's KubeletAuthorization.
type Authorization struct {
	// Mode is AlwaysAllow or Webhook (SubjectAccessReview).
	Mode    string               `config:"mode"`
	Webhook WebhookAuthorization `config:"webhook"`
}

// WebhookAuthorization caches the API server's answers.
type WebhookAuthorization struct {
	CacheAuthorizedTTL   time.Duration `config:"cache_authorized_ttl"`
	CacheUnauthorizedTTL time.Duration `config:"cache_unauthorized_ttl"`
}

// Plugin is one plugin "<kind>" "<name>" block.
type Plugin struct {
	Kind string `config:"-"`
	Name string `config:"-"`
	// Binary is a file name in plugin_dir; after Load, microlet-<kind>-<name>
	// unless set.
	Binary string `config:"binary"`
	// SHA256 pins the binary's checksum (lowercase hex); empty means unpinned.
	SHA256 string            `config:"sha256"`
	Args   []string          `config:"args"`
	Env    map[string]string `config:"env"`
	// Config is the block's config body, verbatim: the core hands it to the
	// plugin, which validates it.
	Config map[string]any `config:"config"`
	// Position is where the block was first declared.
	Position Position `config:"-"`
}

// Position is where a key was set: a config file and line, or, for values
// from the environment or the command line, the variable or flag (Line 0).
type Position struct {
	File string
	Line int
}

// String renders the position as file:line, or just the variable or flag.
func (p Position) String() string {
	if p.Line == 0 {
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// Defaults returns the built-in defaults. Keys whose default depends on
// another (node_name, image_service_endpoint, pod_push_socket, cert_dir, a
// plugin's binary) are empty here and filled in by Load.
func Defaults() *Config {
	return &Config{
		RootDir:                     "/var/lib/microlet",
		PodLogsDir:                  "/var/log/pods",
		ContainerLogsDir:            "/var/log/containers",
		ContainerLogMaxSize:         "10Mi",
		ContainerLogMaxFiles:        5,
		ContainerLogMonitorInterval: 10 * time.Second,
		ContainerLogMaxWorkers:      1,
		LogLevel:                    "info",
		GOMAXPROCS:                  1,
		PluginDir:                   "/usr/libexec/microlet/plugins",
		ContainerRuntimeEndpoint:    "unix:///run/containerd/containerd.sock",
		RuntimeRequestTimeout:       2 * time.Minute,
		StaticPodURLHeader:          map[string][]string{},
		FileCheckFrequency:          20 * time.Second,
		HTTPCheckFrequency:          20 * time.Second,
		SyncFrequency:               time.Minute,
		MaxPods:                     110,
		SerializeImagePulls:         true,
		CNIConfDir:                  "/etc/cni/net.d",
		CNIBinDirs:                  []string{"/opt/cni/bin", "/usr/lib/cni"},
		ClusterDNS:                  []string{},
		ResolvConf:                  "/etc/resolv.conf",
		AllowedUnsafeSysctls:        []string{},
		HealthzBindAddress:          "127.0.0.1",
		HealthzPort:                 10248,
		Address:                     "0.0.0.0",
		Port:                        10250,
		TLSCipherSuites:             []string{},
		EnableDebuggingHandlers:     true,
		EnableProfilingHandler:      true,
		EnableDebugFlagsHandler:     true,
		NodeLogDir:                  "/var/log",
		KubeAPIQPS:                  50,
		KubeAPIBurst:                100,
		KubeAPIContentType:          "application/vnd.kubernetes.protobuf",
		RegisterNode:                true,
		NodeLabels:                  map[string]string{},
		RegisterWithTaints:          []string{},
		NodeStatusUpdateFrequency:   10 * time.Second,
		NodeStatusReportFrequency:   5 * time.Minute,
		NodeLeaseDurationSeconds:    40,
		Authentication: Authentication{
			Webhook: WebhookAuthentication{Enabled: true, CacheTTL: 2 * time.Minute},
		},
		Authorization: Authorization{
			Mode:    "Webhook",
			Webhook: WebhookAuthorization{CacheAuthorizedTTL: 5 * time.Minute, CacheUnauthorizedTTL: 30 * time.Second},
		},
		CgroupDriver:                     "cgroupfs",
		CgroupRoot:                       "/",
		EvictionMonitoringInterval:       10 * time.Second,
		CPUManagerReconcilePeriod:        10 * time.Second,
		EvictionMaxPodsPerCycle:          1,
		KernelMemcgNotification:          true,
		EvictionPressurePollInterval:     time.Second,
		ShutdownGracePeriodByPodPriority: map[string]string{},
		PluginHost: PluginHost{
			StartTimeout:      10 * time.Second,
			CallTimeout:       2 * time.Second,
			HealthInterval:    10 * time.Second,
			HealthTimeout:     time.Second,
			HealthFailures:    2,
			RestartBackoff:    100 * time.Millisecond,
			RestartBackoffMax: 30 * time.Second,
			RestartBudget:     5,
			RestartWindow:     10 * time.Minute,
			DrainTimeout:      5 * time.Second,
			WatchPluginDir:    true,
		},
	}
}

// Position reports where a dotted key ("plugin_host.call_timeout",
// "plugin.eviction.kubelet.config.hard") was last set. It is false for keys
// that kept their built-in default and for keys never seen.
func (c *Config) Position(key string) (Position, bool) {
	p, ok := c.positions[key]
	return p, ok
}
