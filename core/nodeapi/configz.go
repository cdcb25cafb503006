package nodeapi

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/core/config"
)

// sharedKubeletKeys are the KubeletConfiguration fields microlet has, by
// their JSON names; /configz shows these and no others.
var sharedKubeletKeys = []string{
	"enableServer", "staticPodPath", "podLogsDir", "syncFrequency", "fileCheckFrequency", "httpCheckFrequency",
	"staticPodURL", "staticPodURLHeader", "address", "port", "readOnlyPort", "tlsCertFile", "tlsPrivateKeyFile",
	"tlsCipherSuites", "tlsMinVersion", "authentication", "authorization", "enableDebuggingHandlers", "healthzPort",
	"healthzBindAddress", "clusterDomain", "clusterDNS", "cgroupRoot", "cgroupDriver", "runtimeRequestTimeout",
	"maxPods", "podCIDR", "resolvConf", "serializeImagePulls", "maxParallelImagePulls", "kernelMemcgNotification",
	"containerRuntimeEndpoint", "imageServiceEndpoint", "enableProfilingHandler", "enableContentionProfiling",
	"enableDebugFlagsHandler",
}

// configz serves /configz as the kubelet's: {"kubeletconfig": ...} in the
// KubeletConfiguration's (v1beta1) shape for the settings microlet shares
// with the kubelet, and beside it "microlet", the whole effective config
// in microlet's HCL layout, secrets redacted.
func (h *handlers) configz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := h.opts.Config()
		redacted := cfg.Redacted()
		kc, err := kubeletConfigz(cfg, redacted)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		body, err := json.Marshal(map[string]any{"kubeletconfig": kc, "microlet": redacted})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// kubeletConfigz is the shared settings in the KubeletConfiguration's JSON
// shape; the static pod URL and its headers come from redacted.
func kubeletConfigz(cfg *config.Config, redacted map[string]any) (map[string]any, error) {
	kc := kubeletconfig.KubeletConfiguration{
		EnableServer:       ptr.To(cfg.Port != 0),
		StaticPodPath:      cfg.StaticPodPath,
		PodLogsDir:         cfg.PodLogsDir,
		SyncFrequency:      metav1.Duration{Duration: cfg.SyncFrequency},
		FileCheckFrequency: metav1.Duration{Duration: cfg.FileCheckFrequency},
		HTTPCheckFrequency: metav1.Duration{Duration: cfg.HTTPCheckFrequency},
		Address:            cfg.Address,
		Port:               int32(cfg.Port),
		ReadOnlyPort:       int32(cfg.ReadOnlyPort),
		TLSCertFile:        cfg.TLSCertFile,
		TLSPrivateKeyFile:  cfg.TLSPrivateKeyFile,
		TLSCipherSuites:    cfg.TLSCipherSuites,
		TLSMinVersion:      cfg.TLSMinVersion,
		Authentication: kubeletconfig.KubeletAuthentication{
			X509: kubeletconfig.KubeletX509Authentication{ClientCAFile: cfg.Authentication.X509.ClientCAFile},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(cfg.Authentication.Webhook.Enabled),
				CacheTTL: metav1.Duration{Duration: cfg.Authentication.Webhook.CacheTTL}},
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(cfg.Authentication.Anonymous.Enabled)},
		},
		Authorization: kubeletconfig.KubeletAuthorization{
			Mode: kubeletconfig.KubeletAuthorizationMode(cfg.Authorization.Mode),
			Webhook: kubeletconfig.KubeletWebhookAuthorization{
				CacheAuthorizedTTL:   metav1.Duration{Duration: cfg.Authorization.Webhook.CacheAuthorizedTTL},
				CacheUnauthorizedTTL: metav1.Duration{Duration: cfg.Authorization.Webhook.CacheUnauthorizedTTL},
			},
		},
		EnableDebuggingHandlers:   ptr.To(cfg.EnableDebuggingHandlers),
		EnableProfilingHandler:    ptr.To(cfg.EnableProfilingHandler),
		EnableContentionProfiling: cfg.EnableContentionProfiling,
		EnableDebugFlagsHandler:   ptr.To(cfg.EnableDebugFlagsHandler),
		HealthzPort:               ptr.To(int32(cfg.HealthzPort)),
		HealthzBindAddress:        cfg.HealthzBindAddress,
		ClusterDomain:             cfg.ClusterDomain,
		ClusterDNS:                cfg.ClusterDNS,
		CgroupRoot:                cfg.CgroupRoot,
		CgroupDriver:              cfg.CgroupDriver,
		RuntimeRequestTimeout:     metav1.Duration{Duration: cfg.RuntimeRequestTimeout},
		MaxPods:                   int32(cfg.MaxPods),
		PodCIDR:                   cfg.PodCIDR,
		ResolverConfig:            ptr.To(cfg.ResolvConf),
		SerializeImagePulls:       ptr.To(cfg.SerializeImagePulls),
		KernelMemcgNotification:   cfg.KernelMemcgNotification,
		ContainerRuntimeEndpoint:  cfg.ContainerRuntimeEndpoint,
		ImageServiceEndpoint:      cfg.ImageServiceEndpoint,
	}
	if cfg.MaxParallelImagePulls > 0 {
		kc.MaxParallelImagePulls = ptr.To(int32(cfg.MaxParallelImagePulls))
	}
	raw, err := json.Marshal(&kc)
	if err != nil {
		return nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(sharedKubeletKeys))
	for _, key := range sharedKubeletKeys {
		if v, ok := all[key]; ok {
			out[key] = v
		}
	}
	if cfg.StaticPodURL != "" {
		out["staticPodURL"] = redacted["static_pod_url"]
	}
	if len(cfg.StaticPodURLHeader) > 0 {
		out["staticPodURLHeader"] = redacted["static_pod_url_header"]
	}
	return out, nil
}
