// Package testregistry runs a real image registry for tests: Debian's
// docker-registry (distribution 2.8) as a process on 127.0.0.1, with a
// private config, TLS from a CA of its own and htpasswd authentication,
// and pushes devnode images into it with the distribution API.
package testregistry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/freeport"
	"github.com/microlet/microlet/internal/lastresort"
)

// Program is the registry's executable, from Debian's docker-registry.
const Program = "docker-registry"

// Registry is a running registry.
type Registry struct {
	// Host is its address, 127.0.0.1:<port>: the registry part of image
	// names and the key of docker configs.
	Host string
	// CAFile is the CA certificate (PEM) its serving certificate chains to.
	CAFile string
	// Dir holds its config, certificates, htpasswd, storage and log.
	Dir string
	// PID is the registry process's.
	PID int

	client *http.Client
	proc   *e2e.Process
	// unregister takes Close off the lastresort watchdog's list.
	unregister func()
}

// Start runs a registry in a new directory under parent ("": the system's
// temporary directory) accepting users (name → password). Close stops it
// and removes the directory.
func Start(ctx context.Context, parent string, users map[string]string) (_ *Registry, err error) {
	if _, err := exec.LookPath(Program); err != nil {
		return nil, fmt.Errorf("%s (Debian package docker-registry): %w", Program, err)
	}
	dir, err := os.MkdirTemp(parent, "testregistry-")
	if err != nil {
		return nil, err
	}
	r := &Registry{Dir: dir, CAFile: filepath.Join(dir, "ca.crt")}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	ca, err := devcluster.NewCA("testregistry CA")
	if err != nil {
		return nil, err
	}
	serving, err := ca.ServingCert("127.0.0.1", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	var htpasswd strings.Builder
	for user, pass := range users {
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.DefaultCost)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&htpasswd, "%s:%s\n", user, hash)
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	r.Host = fmt.Sprintf("127.0.0.1:%d", port)
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %[1]s/data
  delete:
    enabled: true
http:
  addr: %[2]s
  tls:
    certificate: %[1]s/server.crt
    key: %[1]s/server.key
auth:
  htpasswd:
    realm: testregistry
    path: %[1]s/htpasswd
`, dir, r.Host)
	for name, data := range map[string]string{"ca.crt": string(ca.PEM), "server.crt": string(serving.CertPEM), "server.key": string(serving.KeyPEM),
		"htpasswd": htpasswd.String(), "config.yml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			return nil, err
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	r.client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}

	logFile, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(Program, "serve", filepath.Join(dir, "config.yml"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.proc, err = e2e.StartProcess(cmd); err != nil {
		return nil, err
	}
	r.PID = r.proc.PID()
	if err := r.waitServing(ctx); err != nil {
		return nil, err
	}
	r.unregister = lastresort.Register("testregistry in "+r.Dir, r.Close)
	return r, nil
}

// waitServing waits until /v2/ asks for credentials, as a registry with
// htpasswd does once it serves.
func (r *Registry) waitServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		resp, err := r.client.Get("https://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		select {
		case <-r.proc.Exited():
			return fmt.Errorf("registry exited: %s", r.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("registry not serving on %s: %v: %s", r.Host, err, r.LogTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail is the end of the registry's log.
func (r *Registry) LogTail() string {
	data, _ := os.ReadFile(filepath.Join(r.Dir, "registry.log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// Close stops the registry by its PID (SIGTERM, SIGKILL after 10 s) and
// removes its directory.
func (r *Registry) Close() error {
	if r.unregister != nil {
		defer r.unregister()
	}
	var errs []error
	if r.proc != nil {
		r.proc.Stop(10 * time.Second)
	}
	if r.Dir != "" {
		errs = append(errs, os.RemoveAll(r.Dir))
	}
	return errors.Join(errs...)
}
