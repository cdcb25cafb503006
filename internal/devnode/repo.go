package devnode

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// EnvKubeTools names the directory holding the upstream binaries
// hack/kube-tools/build.sh builds (kubelet, kube-apiserver, kubectl,
// sample-device-plugin); default .cache/kube/bin of the checkout.
const EnvKubeTools = "KUBE_TOOLS_BIN"

const modulePath = "github.com/microlet/microlet"

// ErrNoCheckout is returned when the working directory is not inside the
// microlet checkout.
var ErrNoCheckout = errors.New("not inside the microlet checkout")

// RepoRoot finds the microlet checkout that holds the working directory:
// tests run in their package's directory, `go run` wherever it was typed.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && moduleOf(data) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoCheckout
		}
		dir = parent
	}
}

// moduleOf returns the module path a go.mod declares.
func moduleOf(goMod []byte) string {
	for _, line := range bytes.Split(goMod, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("module ")); ok {
			return strings.Trim(string(bytes.TrimSpace(rest)), `"`)
		}
	}
	return ""
}

// KubeToolsDir is $KUBE_TOOLS_BIN, else .cache/kube/bin of the checkout.
func KubeToolsDir() (string, error) {
	if dir := os.Getenv(EnvKubeTools); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "kube", "bin"), nil
}
