package transport

import (
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
)

// setEnv puts a launch's environment into this process's, as the plugin
// process gets it.
func setEnv(t *testing.T, env []string) {
	t.Helper()
	for _, kv := range env {
		key, value, _ := strings.Cut(kv, "=")
		t.Setenv(key, value)
	}
}

// handshake runs a TLS handshake between the two configs over a pipe and
// returns the client's and the server's errors.
func handshake(client, server *tls.Config) (clientErr, serverErr error) {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- tls.Server(s, server).Handshake() }()
	clientErr = tls.Client(c, client).Handshake()
	if clientErr != nil {
		c.Close()
	}
	return clientErr, <-done
}

func TestLaunchTLSBothEndsTrustEachOther(t *testing.T) {
	client, env, err := launchTLS()
	if err != nil {
		t.Fatal(err)
	}
	setEnv(t, env)
	server, err := ServerTLS()
	if err != nil || server == nil {
		t.Fatalf("ServerTLS() = %v, %v; want a config", server, err)
	}
	for _, key := range []string{EnvServerTLS, envClientCert} {
		if _, ok := os.LookupEnv(key); ok {
			t.Errorf("%s is still in the environment: a process the plugin starts would inherit it", key)
		}
	}
	if cErr, sErr := handshake(client, server); cErr != nil || sErr != nil {
		t.Fatalf("launcher to plugin: %v / %v", cErr, sErr)
	}
	// The broker's connections go the other way.
	if cErr, sErr := handshake(server, client); cErr != nil || sErr != nil {
		t.Fatalf("plugin to launcher: %v / %v", cErr, sErr)
	}
}

func TestLaunchTLSRefusesAnotherLaunchsPeer(t *testing.T) {
	client, _, err := launchTLS()
	if err != nil {
		t.Fatal(err)
	}
	_, otherEnv, err := launchTLS()
	if err != nil {
		t.Fatal(err)
	}
	setEnv(t, otherEnv)
	other, err := ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	if cErr, sErr := handshake(client, other); cErr == nil && sErr == nil {
		t.Fatal("a launcher completed a handshake with a plugin launched by another")
	}
}

func TestServerTLSWithoutItsVariableLeavesAutoMTLS(t *testing.T) {
	t.Setenv(EnvServerTLS, "")
	os.Unsetenv(EnvServerTLS)
	config, err := ServerTLS()
	if config != nil || err != nil {
		t.Fatalf("ServerTLS() without %s = %v, %v; want nil, nil (go-plugin's AutoMTLS)", EnvServerTLS, config, err)
	}
}

func TestServerTLSBadVariable(t *testing.T) {
	t.Setenv(EnvServerTLS, "not PEM")
	t.Setenv(envClientCert, "")
	if _, err := ServerTLS(); err == nil || !strings.Contains(err.Error(), EnvServerTLS) {
		t.Fatalf("ServerTLS() with a bad %s: %v; want an error naming it", EnvServerTLS, err)
	}
}
