# microlet configuration: every key, set to its built-in default.
#
# Pass this file with --config; drop-ins in --config-dir (*.hcl, file-name
# order) override it key by key; then MICROLET_* environment variables, then
# command-line flags. See docs/configuration.md. Durations are strings such
# as "500ms", "20s", "2m".

# Node name. Empty: the host name. Lowercased either way. Flag --hostname-override.
node_name = ""
# Directory for the agent's files (volume mounts, sockets, state). Flag --root-dir.
root_dir = "/var/lib/microlet"
# Directory of container logs, <namespace>_<pod>_<uid>/<container>/<n>.log.
pod_logs_dir = "/var/log/pods"
# Directory of the kubelet's symlinks to container logs, which log shippers read; "" makes none.
container_logs_dir = "/var/log/containers"
# Size at which a running container's log is rotated (a quantity); negative turns rotation off. Flag --container-log-max-size.
container_log_max_size = "10Mi"
# Most files a container's log keeps, the live one included (at least 2); rotations but the newest are gzipped. Flag --container-log-max-files.
container_log_max_files = 5
# How often container logs are checked for rotation (at least 3s).
container_log_monitor_interval = "10s"
# Containers whose logs are rotated at once.
container_log_max_workers = 1
# Log level: trace, debug, info, warn or error. Flag --log-level.
log_level = "info"
# Write logs as JSON lines instead of text. Flag --log-json.
log_json = false
# Ps running Go code (GOMAXPROCS): the work is I/O bound; one P keeps plugin calls ~3x faster. 0: Go's default. Flag --gomaxprocs.
gomaxprocs = 1
# Directory of plugin binaries, named microlet-<kind>-<name>. Flag --plugin-dir.
plugin_dir = "/usr/libexec/microlet/plugins"
# CRI runtime service endpoint. Flag --container-runtime-endpoint.
container_runtime_endpoint = "unix:///run/containerd/containerd.sock"
# CRI image service endpoint. Empty: the runtime endpoint. Flag --image-service-endpoint.
image_service_endpoint = ""
# Timeout of every CRI call except long-running ones (pull, logs, exec, attach). Flag --runtime-request-timeout.
runtime_request_timeout = "2m"
# Directory (or single file) of static pod manifests; empty disables. Flag --pod-manifest-path.
static_pod_path = ""
# URL serving a Pod or PodList of static pods; empty disables. Flag --manifest-url.
static_pod_url = ""
# HTTP headers sent to static_pod_url: name = [values]. Flag --manifest-url-header.
static_pod_url_header = {}
# Period of full re-reads of static_pod_path (changes are also watched). Flag --file-check-frequency.
file_check_frequency = "20s"
# Period of fetches of static_pod_url. Flag --http-check-frequency.
http_check_frequency = "20s"
# Longest time between two syncs of a pod with the runtime. Flag --sync-frequency.
sync_frequency = "1m"
# Number of pods this node admits. Flag --max-pods.
max_pods = 110
# Pull one image at a time; false: as many at once as max_parallel_image_pulls allows. Flag --serialize-image-pulls.
serialize_image_pulls = true
# Image pulls at once when serialize_image_pulls is false; 0: no limit (more than 1 with
# serialize_image_pulls = true is refused, as by the kubelet). Flag --max-parallel-image-pulls.
max_parallel_image_pulls = 0
# The kubelet's credential provider config file (CredentialProviderConfig, kubelet.config.k8s.io/v1):
# exec plugins that supply image pull credentials; "": none. Flag --image-credential-provider-config.
image_credential_provider_config = ""
# Where the plugins that file names are. Flag --image-credential-provider-bin-dir.
image_credential_provider_bin_dir = ""
# Directory of the node's CNI network config; the core checks it to report network readiness precisely.
cni_conf_dir = "/etc/cni/net.d"
# Directories searched for CNI plugin binaries, for the same check.
cni_bin_dirs = ["/opt/cni/bin", "/usr/lib/cni"]
# Write a bridge network for pod_cidr into cni_conf_dir at start when it holds none (as kubenet
# did): bridge cbr0, host-local addresses from pod_cidr, portmap for hostPorts. cni_conf_dir must be
# the directory the runtime reads (containerd: plugins."io.containerd.grpc.v1.cri".cni.conf_dir).
cni_bridge_config = false
# Node address; one IP, or an IPv4 and an IPv6 one separated by a comma. Flag --node-ip.
node_ip = ""
# CIDR of pod addresses on this node. Flag --pod-cidr.
pod_cidr = ""
# DNS server addresses written into pods' resolv.conf (ClusterFirst pods).
cluster_dns = []
# Cluster DNS domain, appended to pods' search paths; empty for none.
cluster_domain = ""
# Host resolver file pods with dnsPolicy Default inherit; empty disables.
resolv_conf = "/etc/resolv.conf"
# Sysctls pods may set beyond the safe set, names or prefixes ending in "*" ("kernel.msg*");
# a pod asking for any other is refused (SysctlForbidden). Flag --allowed-unsafe-sysctls.
allowed_unsafe_sysctls = []
# Containers that name no seccomp profile run under the runtime's default rather than Unconfined.
# Flag --seccomp-default.
seccomp_default = false
# Unix socket of the HTTP pod push source. Empty: <root_dir>/pods.sock.
pod_push_socket = ""
# Address of the healthz endpoint.
healthz_bind_address = "127.0.0.1"
# Port of the healthz endpoint (/healthz only); 0 disables it.
healthz_port = 10248

# The node API (docs/node-api.md): /pods, /stats/summary, /metrics, /logs,
# /containerLogs, exec, attach, port-forward, run and more, as the kubelet's.
# Address of the HTTPS listener. Flag --address.
address = "0.0.0.0"
# Port of the HTTPS listener (authenticated and authorized); 0 disables it. Flag --port.
port = 10250
# Port of the plain-HTTP listener of the read-only endpoints, without authentication; 0 disables it. Flag --read-only-port.
read_only_port = 0
# Serving certificate (PEM, chain after the leaf). Empty with tls_private_key_file: a self-signed pair in cert_dir. Flag --tls-cert-file.
tls_cert_file = ""
# Key of tls_cert_file. Flag --tls-private-key-file.
tls_private_key_file = ""
# Directory of the self-signed pair (kubelet.crt, kubelet.key), made on first start. Empty: <root_dir>/pki. Flag --cert-dir.
cert_dir = ""
# Lowest TLS version served: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13. Empty: Go's default (1.2). Flag --tls-min-version.
tls_min_version = ""
# TLS cipher suites served, by IANA name. Empty: Go's defaults. Flag --tls-cipher-suites.
tls_cipher_suites = []
# Serve exec, attach, port-forward, run, containerLogs, /logs and /runningpods; off, they answer 405. Flag --enable-debugging-handlers.
enable_debugging_handlers = true
# Serve Go's profiles on /debug/pprof/ (heap, goroutine, profile, trace, ...) with the debugging handlers; off, it answers 405.
enable_profiling_handler = true
# Record every blocking event for /debug/pprof/block (costs time on each contended lock); only with enable_profiling_handler. Flag --contention-profiling.
enable_contention_profiling = false
# Serve PUT /debug/flags/v with the debugging handlers: a klog verbosity (0-3 info, 4 debug, 5+ trace) sets the log level until the next reload.
enable_debug_flags_handler = true
# Directory /logs/ serves (files and listings; nothing outside it, symlinks included).
node_log_dir = "/var/log"
# Kubeconfig reaching the API server. Set, this is a cluster node (registration, status, lease, the API server's pods for it,
# token and access reviews); unset, a standalone one. Flag --kubeconfig.
kubeconfig = ""
# Kubeconfig for TLS bootstrapping (a bootstrap token): used when kubeconfig does not exist yet to get a client certificate
# through a kubernetes.io/kube-apiserver-client-kubelet CSR; the pair goes in cert_dir and kubeconfig is written. Flag --bootstrap-kubeconfig.
bootstrap_kubeconfig = ""
# Ask for a new client certificate before the current one expires. Flag --rotate-certificates.
rotate_certificates = false
# Get the node API's serving certificate from a kubernetes.io/kubelet-serving CSR (node addresses as SANs), rotated
# likewise; until it is issued the self-signed pair serves.
server_tls_bootstrap = false
# Requests per second to the API server, and the burst above it (client-go's token bucket). Flags --kube-api-qps, --kube-api-burst.
kube_api_qps = 50
# The burst of requests allowed above kube_api_qps. Flag --kube-api-burst.
kube_api_burst = 100
# Wire format of requests to the API server: application/vnd.kubernetes.protobuf or application/json. Flag --kube-api-content-type.
kube_api_content_type = "application/vnd.kubernetes.protobuf"
# Create or reconcile this node's Node object. Flag --register-node.
register_node = true
# Labels added at registration; kubernetes.io and k8s.io ones only with the kubelet's allowed prefixes
# (kubelet.kubernetes.io/, node.kubernetes.io/ and the well-known topology and instance-type labels). Flag --node-labels.
node_labels = {}
# Taints given at registration, each "key[=value]:Effect". Flag --register-with-taints.
register_with_taints = []
# How often node status is computed (and posted when it changed). Flag --node-status-update-frequency.
node_status_update_frequency = "10s"
# How often node status is posted when nothing changed.
node_status_report_frequency = "5m"
# Duration of the node's Lease in kube-node-lease; it is renewed every quarter of it.
node_lease_duration_seconds = 40

# Who may call the node API.
authentication {
  x509 {
    # PEM bundle of CAs: a client certificate they signed authenticates as its common name, its organizations as groups. Flag --client-ca-file.
    client_ca_file = ""
  }
  webhook {
    # Authenticate bearer tokens with a TokenReview (needs kubeconfig). Flag --authentication-token-webhook.
    enabled = true
    # How long a review's answer is kept. Flag --authentication-token-webhook-cache-ttl.
    cache_ttl = "2m"
  }
  anonymous {
    # Let requests without credentials in as system:anonymous (group system:unauthenticated). Flag --anonymous-auth.
    enabled = false
  }
}

# What callers may do.
authorization {
  # AlwaysAllow, or Webhook: a SubjectAccessReview on nodes/<subresource> (needs kubeconfig). Flag --authorization-mode.
  mode = "Webhook"
  webhook {
    # How long an allowed answer is kept. Flag --authorization-webhook-cache-authorized-ttl.
    cache_authorized_ttl = "5m"
    # How long a denied answer is kept. Flag --authorization-webhook-cache-unauthorized-ttl.
    cache_unauthorized_ttl = "30s"
  }
}

# Cgroup driver: cgroupfs (the kubelet's systemd driver is refused until microlet has it).
cgroup_driver = "cgroupfs"
# Root cgroup under which the agent places pods.
cgroup_root = "/"
# Period of eviction cycles (the kubelet's evictionMonitoringPeriod); memory notifications start one sooner.
eviction_monitoring_interval = "10s"
# How often running containers' cpusets are checked against the CPU manager's state (cpuManagerReconcilePeriod); the policy is the cgroup plugin's cpu_manager_policy.
cpu_manager_reconcile_period = "10s"
# Most pods evicted in one cycle, whatever the eviction plugin asks; the kubelet evicts one.
eviction_max_pods_per_cycle = 1
# Start an eviction cycle at once when the kernel reports memory pressure. Flag --kernel-memcg-notification.
kernel_memcg_notification = true
# How often memory pressure stall averages (PSI) are read while the eviction strategy asks to be woken at a level
# (the psi strategy); a level reached starts a cycle. Nothing is read for strategies that ask none. 0s: never.
eviction_pressure_poll_interval = "1s"
# Graceful node shutdown (docs/shutdown.md): how long a logind delay inhibitor lock holds the machine's shutdown
# back while the pods stop, non-critical pods first; 0 leaves shutdown unhandled. Needs logind on the system D-Bus.
shutdown_grace_period = "0s"
# The part of shutdown_grace_period kept for critical pods (priority system-cluster-critical and up), stopped last.
shutdown_grace_period_critical_pods = "0s"
# Instead of the two above: pod priority to the grace period of the pods from that priority up to the next listed,
# stopped lowest first, e.g. { "0" = "20s", "100000" = "10s", "2000000000" = "5s" }. Empty: the two above.
shutdown_grace_period_by_pod_priority = {}

# How the core runs and supervises plugin processes.
plugin_host {
  # Longest wait for a plugin to start and complete its handshake.
  start_timeout = "10s"
  # Deadline of each call to a plugin.
  call_timeout = "2s"
  # Period of health checks of each plugin; a call that runs out of time checks at once.
  health_interval = "10s"
  # Deadline of one health check.
  health_timeout = "1s"
  # Consecutive failed health checks after which a plugin is restarted.
  health_failures = 2
  # First delay before restarting a failed plugin; it grows exponentially up to restart_backoff_max.
  restart_backoff = "100ms"
  # Longest delay between restarts.
  restart_backoff_max = "30s"
  # Restarts allowed within restart_window before the plugin is disabled.
  restart_budget = 5
  # Window over which restart_budget is counted.
  restart_window = "10m"
  # Longest wait for in-flight calls when a plugin is stopped or replaced.
  drain_timeout = "5s"
  # Watch plugin_dir for changed plugin binaries.
  watch_plugin_dir = true
}

# Plugins: one block per plugin, plugin "<kind>" "<name>". Kinds eviction,
# imagegc, probes, cgroup and stats take at most one block each; devices
# takes several. Kind and name are lowercase letters, digits and '-'.
# Each config body is handed to the plugin verbatim; the plugin documents
# and validates its keys, so the bodies here are left empty where the
# plugin's defaults suffice. `microlet config validate --plugin-dir
# $PWD/_output/bin examples/microlet.hcl` checks this file against the
# built plugins.
# One eviction block: "kubelet", "priority" or "psi" (docs/eviction.md). The psi strategy takes every key of
# the kubelet strategy and adds pressure stall (PSI) levels, "<some|full>.avg<10|60|300>><percent>"; any level
# above evicts, ranked as the kubelet ranks for memory. Its defaults:
#   plugin "eviction" "psi" {
#     config {
#       memory_pressure     = ["some.avg10>40", "full.avg10>20"]  # the node's /proc/pressure/memory
#       pod_memory_pressure = ["full.avg10>60"]                   # each pod's memory.pressure (unified hierarchy only)
#     }
#   }
plugin "eviction" "kubelet" {
  # File name in plugin_dir. Empty: microlet-<kind>-<name>.
  binary = ""
  # SHA-256 of the binary (64 hex characters), verified on every launch; empty: not pinned.
  sha256 = ""
  # Command-line arguments of the plugin process.
  args = []
  # Environment variables of the plugin process (values are redacted on /configz).
  env = {}
  # The plugin's own settings.
  config {}
}

plugin "imagegc" "lru" {
  config {}
}

plugin "probes" "default" {
  config {}
}

plugin "cgroup" "default" {
  # Every key of this block: docs/cgroups.md. The resource managers:
  config {
    # memoryManagerPolicy: "None", or "Static" (a Guaranteed pod's memory
    # and hugepages pinned to NUMA nodes; needs reserved_memory).
    memory_manager_policy = "None"
    # reservedMemory: what the system keeps of each NUMA node, by type
    # (memory, hugepages-<size>); per type the entries add up to what node
    # allocatable holds back (kube_reserved + system_reserved + the
    # eviction hard threshold), e.g.
    # [{ numa_node = 0, limits = { memory = "1124Mi" } }].
    reserved_memory = []
    # topologyManagerPolicy: "none", "best-effort", "restricted" or
    # "single-numa-node" (NUMA alignment of CPUs, memory and devices).
    topology_manager_policy = "none"
    # topologyManagerScope: "container" or "pod".
    topology_manager_scope = "container"
  }
}

plugin "stats" "default" {
  config {}
}

plugin "devices" "hostdev" {
  # hostdev has no default resource: it offers the device nodes named here.
  config {
    resources = [{ name = "microlet.dev/fuse", paths = ["/dev/fuse"] }]
  }
}
