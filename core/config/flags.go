package config

import (
	"fmt"
	"reflect"

	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Flags naming the config file and the drop-in directory, as the kubelet's.
const (
	FlagConfig    = "config"
	FlagConfigDir = "config-dir"
)

// flagSpec is a command-line flag that sets a config key.
type flagSpec struct {
	name, key, usage string
	// repeatable flags add to what earlier uses gave, as the kubelet's
	// --manifest-url-header does.
	repeatable bool
	// credentials: the value may carry a password or token, hidden by
	// RedactedArgs.
	credentials bool
}

// flagSpecs use the kubelet's flag names where it has the flag.
var flagSpecs = []flagSpec{
	{name: "hostname-override", key: "node_name", usage: "If non-empty, use this string as the node name instead of the host name. Lowercased."},
	{name: "root-dir", key: "root_dir", usage: "Directory for the agent's files (volume mounts, sockets, state)."},
	{name: "pod-manifest-path", key: "static_pod_path", usage: "Path to the directory (or single file) of static pod manifests. Files whose names start with dots are ignored."},
	{name: "manifest-url", key: "static_pod_url", credentials: true, usage: "URL to fetch static pod manifests from."},
	{name: "manifest-url-header", key: "static_pod_url_header", repeatable: true, credentials: true,
		usage: "Comma-separated list of HTTP headers to use when accessing --manifest-url. Multiple headers with the same name are added in the same order given, and the flag can be repeated, e.g. --manifest-url-header 'a:hello,b:again,c:world' --manifest-url-header 'b:beautiful'."},
	{name: "file-check-frequency", key: "file_check_frequency", usage: "Duration between re-reads of --pod-manifest-path."},
	{name: "http-check-frequency", key: "http_check_frequency", usage: "Duration between fetches of --manifest-url."},
	{name: "sync-frequency", key: "sync_frequency", usage: "Maximum period between synchronizing running containers and config."},
	{name: "container-runtime-endpoint", key: "container_runtime_endpoint", usage: "The endpoint of the CRI runtime service (unix://...)."},
	{name: "image-service-endpoint", key: "image_service_endpoint", usage: "The endpoint of the CRI image service (unix://...). Defaults to --container-runtime-endpoint."},
	{name: "runtime-request-timeout", key: "runtime_request_timeout", usage: "Timeout of every CRI request except long-running ones (pull, logs, exec, attach)."},
	{name: "container-log-max-size", key: "container_log_max_size", usage: "Set the maximum size (e.g. 10Mi) of container log file before it is rotated."},
	{name: "container-log-max-files", key: "container_log_max_files", usage: "Set the maximum number of container log files that can be present for a container. The number must be >= 2."},
	{name: "max-pods", key: "max_pods", usage: "Number of pods that can run on this node."},
	{name: "serialize-image-pulls", key: "serialize_image_pulls", usage: "Pull images one at a time."},
	{name: "max-parallel-image-pulls", key: "max_parallel_image_pulls", usage: "Maximum number of image pulls in parallel when serialize-image-pulls is false; 0 means no limit."},
	{name: "image-credential-provider-config", key: "image_credential_provider_config", usage: "Path to the credential provider plugin config file (CredentialProviderConfig)."},
	{name: "image-credential-provider-bin-dir", key: "image_credential_provider_bin_dir", usage: "Path to the directory where credential provider plugin binaries are located."},
	{name: "node-ip", key: "node_ip", usage: "IP address (or comma-separated dual-stack IP addresses) of the node."},
	{name: "pod-cidr", key: "pod_cidr", usage: "The CIDR to use for pod IP addresses."},
	{name: "log-level", key: "log_level", usage: "Log level: trace, debug, info, warn or error."},
	{name: "log-json", key: "log_json", usage: "Write logs as JSON lines."},
	{name: "plugin-dir", key: "plugin_dir", usage: "Directory holding the plugin binaries (microlet-<kind>-<name>)."},
	{name: "kernel-memcg-notification", key: "kernel_memcg_notification", usage: "Start an eviction cycle at once when the kernel reports memory pressure (memcg thresholds on cgroup v1, PSI and memory.events on v2)."},
	{name: "address", key: "address", usage: "The IP address for the node API to serve on."},
	{name: "port", key: "port", usage: "The port for the node API to serve on (set to 0 to disable)."},
	{name: "read-only-port", key: "read_only_port", usage: "The read-only port for the node API to serve on with no authentication/authorization (set to 0 to disable)."},
	{name: "tls-cert-file", key: "tls_cert_file", usage: "File containing the x509 certificate for HTTPS (CA cert, if any, concatenated after the server cert). Without it, a self-signed pair is made in --cert-dir."},
	{name: "tls-private-key-file", key: "tls_private_key_file", usage: "File containing the x509 private key matching --tls-cert-file."},
	{name: "cert-dir", key: "cert_dir", usage: "The directory where the TLS certs are located. Ignored with --tls-cert-file and --tls-private-key-file."},
	{name: "tls-min-version", key: "tls_min_version", usage: "Minimum TLS version supported: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13."},
	{name: "tls-cipher-suites", key: "tls_cipher_suites", usage: "Comma-separated list of cipher suites for the server, by IANA name. If omitted, the default Go cipher suites are used."},
	{name: "enable-debugging-handlers", key: "enable_debugging_handlers", usage: "Enables server endpoints for log collection and local running of containers and commands."},
	{name: "contention-profiling", key: "enable_contention_profiling", usage: "Enable block profiling, if profiling is enabled."},
	{name: "kubeconfig", key: "kubeconfig", usage: "Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting --kubeconfig enables standalone mode."},
	{name: "bootstrap-kubeconfig", key: "bootstrap_kubeconfig", usage: "Path to a kubeconfig file that will be used to get client certificate for kubelet. If the file specified by --kubeconfig does not exist, the bootstrap kubeconfig is used to request a client certificate from the API server. On success, a kubeconfig file referencing the generated client certificate and key is written to the path specified by --kubeconfig. The client certificate and key file will be stored in the directory pointed by --cert-dir."},
	{name: "rotate-certificates", key: "rotate_certificates", usage: "Auto rotate the kubelet client certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches."},
	{name: "kube-api-qps", key: "kube_api_qps", usage: "QPS to use while talking with kubernetes apiserver."},
	{name: "kube-api-burst", key: "kube_api_burst", usage: "Burst to use while talking with kubernetes apiserver."},
	{name: "kube-api-content-type", key: "kube_api_content_type", usage: "Content type of requests sent to apiserver."},
	{name: "register-node", key: "register_node", usage: "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the Kubelet won't have an apiserver to register with."},
	{name: "node-labels", key: "node_labels", usage: "Labels to add when registering the node in the cluster. Labels must be key=value pairs separated by ','. Labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set (beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/instance-type, topology.kubernetes.io/region, topology.kubernetes.io/zone)"},
	{name: "allowed-unsafe-sysctls", key: "allowed_unsafe_sysctls", usage: "Comma-separated whitelist of unsafe sysctls or unsafe sysctl patterns (ending in *). Use these at your own risk."},
	{name: "seccomp-default", key: "seccomp_default", usage: "Enable the use of RuntimeDefault as the default seccomp profile for all workloads."},
	{name: "register-with-taints", key: "register_with_taints", usage: "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"). No-op if register-node is false."},
	{name: "node-status-update-frequency", key: "node_status_update_frequency", usage: "Specifies how often kubelet posts node status to master."},
	{name: "client-ca-file", key: "authentication.x509.client_ca_file", usage: "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate."},
	{name: "authentication-token-webhook", key: "authentication.webhook.enabled", usage: "Use the TokenReview API to determine authentication for bearer tokens."},
	{name: "authentication-token-webhook-cache-ttl", key: "authentication.webhook.cache_ttl", usage: "The duration to cache responses from the webhook token authenticator."},
	{name: "anonymous-auth", key: "authentication.anonymous.enabled", usage: "Enables anonymous requests to the node API. Requests that are not rejected by another authentication method are treated as anonymous requests: username system:anonymous, group system:unauthenticated."},
	{name: "authorization-mode", key: "authorization.mode", usage: "Authorization mode for the node API: AlwaysAllow or Webhook (SubjectAccessReview)."},
	{name: "authorization-webhook-cache-authorized-ttl", key: "authorization.webhook.cache_authorized_ttl", usage: "The duration to cache 'authorized' responses from the webhook authorizer."},
	{name: "authorization-webhook-cache-unauthorized-ttl", key: "authorization.webhook.cache_unauthorized_ttl", usage: "The duration to cache 'unauthorized' responses from the webhook authorizer."},
	{name: "gomaxprocs", key: "gomaxprocs", usage: "Number of OS threads running Go code at once (GOMAXPROCS); 0 leaves Go's default."},
}

// RegisterFlags adds --config, --config-dir and the flags that set config
// keys to fs. Values are checked by Load, with every other config error.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String(FlagConfig, "", "Path to the HCL config file. Without it the agent runs on built-in defaults, the environment and flags.")
	fs.String(FlagConfigDir, "", "Directory of *.hcl drop-in files, merged over --config in file-name order.")
	defaults := reflect.ValueOf(Defaults()).Elem()
	for _, spec := range flagSpecs {
		f := agentSchema.byKey[spec.key]
		v := &textValue{typ: f.kind.flagType, repeatable: spec.repeatable}
		fl := fs.VarPF(v, spec.name, "", spec.usage)
		fl.DefValue = defaultText(defaults.FieldByIndex(f.index))
		if f.kind == valueKinds[reflect.TypeFor[bool]()] {
			fl.NoOptDefVal = "true"
		}
	}
}

// LoadOptionsFromFlags reads --config and --config-dir from a parsed fs
// that RegisterFlags set up.
func LoadOptionsFromFlags(fs *pflag.FlagSet, environ []string) LoadOptions {
	// Both are string flags registered by RegisterFlags; a flag set without
	// them simply names no files.
	mainFile, _ := fs.GetString(FlagConfig)
	dropInDir, _ := fs.GetString(FlagConfigDir)
	return LoadOptions{MainFile: mainFile, DropInDir: dropInDir, Environ: environ, Flags: fs}
}

// defaultText renders a default for --help; empty values show nothing.
func defaultText(rv reflect.Value) string {
	if rv.IsZero() || ((rv.Kind() == reflect.Map || rv.Kind() == reflect.Slice) && rv.Len() == 0) {
		return ""
	}
	return fmt.Sprint(rv.Interface())
}

// textValue keeps a flag's text as given, so that Load checks it with the
// same rules and messages as the environment and files.
type textValue struct {
	text       string
	typ        string
	repeatable bool
	set        bool
}

func (v *textValue) String() string { return v.text }
func (v *textValue) Type() string   { return v.typ }

func (v *textValue) Set(s string) error {
	if v.repeatable && v.set {
		s = v.text + "," + s
	}
	v.text, v.set = s, true
	return nil
}

// flagLayer reads the flags of flagSpecs the user set.
func flagLayer(fs *pflag.FlagSet) (koanf.Provider, *layer) {
	l := &layer{text: true, positions: map[string]Position{}, spell: quoteName}
	byName := make(map[string]flagSpec, len(flagSpecs))
	for _, spec := range flagSpecs {
		byName[spec.name] = spec
	}
	// Without a koanf instance posflag takes only changed flags.
	p := posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
		spec, ok := byName[f.Name]
		if !ok || !f.Changed {
			return "", nil
		}
		l.positions[spec.key] = Position{File: "--" + f.Name}
		return spec.key, f.Value.String()
	})
	return p, l
}
