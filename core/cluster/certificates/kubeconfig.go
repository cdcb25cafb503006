package certificates

import (
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	certutil "k8s.io/client-go/util/cert"
)

// kubeconfigInvalid says why the kubeconfig at path cannot be used as a
// node's credentials, nil when it can: it must exist, load, and hold a
// client certificate none of whose certificates has expired.
func kubeconfigInvalid(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return err
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return err
	}
	// Reads the certificate files into CertData.
	if _, err := transport.TLSConfigFor(tc); err != nil {
		return err
	}
	certs, err := certutil.ParseCertsPEM(tc.TLS.CertData)
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	if len(certs) == 0 {
		return errors.New("no client certificate")
	}
	now := time.Now()
	for _, c := range certs {
		if now.After(c.NotAfter) {
			return fmt.Errorf("the client certificate expired at %s", c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// writeKubeconfig writes the kubelet's bootstrapped kubeconfig: the
// bootstrap kubeconfig's server and CA, and the pair file pemPath (the
// store's current link, so that rotation needs no rewrite) as the client
// certificate and key.
func writeKubeconfig(path string, bootstrap *rest.Config, pemPath string) error {
	cluster := &clientcmdapi.Cluster{Server: bootstrap.Host, InsecureSkipTLSVerify: bootstrap.Insecure,
		CertificateAuthority: bootstrap.CAFile}
	if bootstrap.CAFile == "" {
		cluster.CertificateAuthorityData = bootstrap.CAData
	}
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
