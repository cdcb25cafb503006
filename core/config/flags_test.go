package config

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestRegisterFlags(t *testing.T) {
	fs := pflag.NewFlagSet("microlet", pflag.ContinueOnError)
	RegisterFlags(fs)
	tests := []struct{ flag, typ, def string }{
		{"config", "string", ""},
		{"config-dir", "string", ""},
		{"hostname-override", "string", ""},
		{"root-dir", "string", "/var/lib/microlet"},
		{"pod-manifest-path", "string", ""},
		{"manifest-url", "string", ""},
		{"manifest-url-header", "colonSeparatedMultimapStringString", ""},
		{"file-check-frequency", "duration", "20s"},
		{"http-check-frequency", "duration", "20s"},
		{"sync-frequency", "duration", "1m0s"},
		{"container-runtime-endpoint", "string", "unix:///run/containerd/containerd.sock"},
		{"image-service-endpoint", "string", ""},
		{"runtime-request-timeout", "duration", "2m0s"},
		{"container-log-max-size", "string", "10Mi"},
		{"container-log-max-files", "int", "5"},
		{"max-pods", "int", "110"},
		{"serialize-image-pulls", "bool", "true"},
		{"max-parallel-image-pulls", "int", ""},
		{"image-credential-provider-config", "string", ""},
		{"image-credential-provider-bin-dir", "string", ""},
		{"node-ip", "string", ""},
		{"pod-cidr", "string", ""},
		{"log-level", "string", "info"},
		{"log-json", "bool", ""},
		{"plugin-dir", "string", "/usr/libexec/microlet/plugins"},
		{"kernel-memcg-notification", "bool", "true"},
		{"gomaxprocs", "int", "1"},
		{"address", "string", "0.0.0.0"},
		{"port", "int", "10250"},
		{"read-only-port", "int", ""},
		{"tls-cert-file", "string", ""},
		{"tls-private-key-file", "string", ""},
		{"cert-dir", "string", ""},
		{"tls-min-version", "string", ""},
		{"tls-cipher-suites", "strings", ""},
		{"enable-debugging-handlers", "bool", "true"},
		{"contention-profiling", "bool", ""},
		{"kubeconfig", "string", ""},
		{"bootstrap-kubeconfig", "string", ""},
		{"rotate-certificates", "bool", ""},
		{"kube-api-qps", "int", "50"},
		{"kube-api-burst", "int", "100"},
		{"kube-api-content-type", "string", "application/vnd.kubernetes.protobuf"},
		{"register-node", "bool", "true"},
		{"node-labels", "mapStringString", ""},
		{"register-with-taints", "strings", ""},
		{"allowed-unsafe-sysctls", "strings", ""},
		{"seccomp-default", "bool", ""},
		{"node-status-update-frequency", "duration", "10s"},
		{"client-ca-file", "string", ""},
		{"authentication-token-webhook", "bool", "true"},
		{"authentication-token-webhook-cache-ttl", "duration", "2m0s"},
		{"anonymous-auth", "bool", ""},
		{"authorization-mode", "string", "Webhook"},
		{"authorization-webhook-cache-authorized-ttl", "duration", "5m0s"},
		{"authorization-webhook-cache-unauthorized-ttl", "duration", "30s"},
	}
	for _, tt := range tests {
		f := fs.Lookup(tt.flag)
		if f == nil {
			t.Errorf("--%s is not registered", tt.flag)
			continue
		}
		if f.Value.Type() != tt.typ || f.DefValue != tt.def {
			t.Errorf("--%s: type %q default %q, want type %q default %q", tt.flag, f.Value.Type(), f.DefValue, tt.typ, tt.def)
		}
		if f.Usage == "" {
			t.Errorf("--%s has no usage text", tt.flag)
		}
	}
	count := 0
	fs.VisitAll(func(*pflag.Flag) { count++ })
	if count != len(tests) {
		t.Errorf("RegisterFlags registered %d flags, want %d", count, len(tests))
	}
}

func TestLoadOptionsFromFlags(t *testing.T) {
	fs := parseFlags(t, "--config=/etc/microlet/microlet.hcl", "--config-dir", "/etc/microlet/conf.d")
	opts := LoadOptionsFromFlags(fs, []string{"MICROLET_MAX_PODS=1"})
	if opts.MainFile != "/etc/microlet/microlet.hcl" || opts.DropInDir != "/etc/microlet/conf.d" ||
		opts.Flags != fs || len(opts.Environ) != 1 {
		t.Errorf("LoadOptionsFromFlags = %+v", opts)
	}
}
