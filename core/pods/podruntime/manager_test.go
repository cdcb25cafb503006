package podruntime

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	err := (&Options{
		RootDir:               "relative",
		PodLogsDir:            "/var/log/pods",
		ContainerLogsDir:      "logs",
		NodeIPs:               []string{"192.0.2.1", "not-an-ip"},
		DNS:                   DNSConfig{ClusterDNS: []string{"10.96.0.300"}},
		MaxParallelImagePulls: -1,
	}).validate()
	if err == nil {
		t.Fatal("invalid options accepted")
	}
	for _, want := range []string{
		"CRI: a runtime client is required",
		"NodeName: the node's name is required",
		`RootDir: "relative" is not an absolute path`,
		`ContainerLogsDir: "logs" is not an absolute path`,
		`NodeIPs: "not-an-ip" is not an IP address`,
		`DNS.ClusterDNS: "10.96.0.300" is not an IP address`,
		"MaxParallelImagePulls: -1 is negative",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "PodLogsDir") {
		t.Errorf("error %q complains about a valid PodLogsDir", err)
	}
}
