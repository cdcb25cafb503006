package pullcreds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// nodeConfigLifetime is how long the node's docker config is reused before
// it is read again, as upstream's CachingDockerConfigProvider.
const nodeConfigLifetime = 5 * time.Minute

// nodeConfig is the node-wide docker config upstream's default keyring
// reads: the first config.json found in the kubelet's root directory, the
// working directory, $HOME/.docker and /.docker; failing that the first
// .dockercfg in the root directory, the working directory, $HOME and /.
type nodeConfig struct {
	jsonDirs, dockercfgDirs []string
	now                     func() time.Time

	mu      sync.Mutex
	cached  keyring
	expires time.Time
}

func newNodeConfig(rootDir string, now func() time.Time) *nodeConfig {
	home := os.Getenv("HOME")
	return &nodeConfig{
		jsonDirs:      []string{rootDir, "", filepath.Join(home, ".docker"), "/.docker"},
		dockercfgDirs: []string{rootDir, "", home, "/"},
		now:           now,
	}
}

// lookup is the node's credentials for image, reading the files again
// once the last read is older than nodeConfigLifetime; the error says what
// made a file unusable when it was read.
func (n *nodeConfig) lookup(image string) ([]AuthConfig, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var err error
	if now := n.now(); !now.Before(n.expires) {
		n.cached, err = n.read()
		n.expires = now.Add(nodeConfigLifetime)
	}
	return n.cached.lookup(image), err
}

// read finds and parses the first config file; a file that does not parse
// is skipped, as upstream, and named in the error.
func (n *nodeConfig) read() (keyring, error) {
	var errs []error
	try := func(dirs []string, name string, parse func([]byte) (DockerConfig, error)) (keyring, bool) {
		for _, dir := range dirs {
			path, err := filepath.Abs(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			cfg, err := parse(data)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
				continue
			}
			var k keyring
			if err := k.add(cfg); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
			}
			return k, true
		}
		return keyring{}, false
	}
	if k, ok := try(n.jsonDirs, "config.json", ParseDockerConfigJSON); ok {
		return k, errors.Join(errs...)
	}
	k, _ := try(n.dockercfgDirs, ".dockercfg", ParseDockercfg)
	return k, errors.Join(errs...)
}
