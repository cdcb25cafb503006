package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// LoadOptions names the sources Load reads.
type LoadOptions struct {
	// MainFile is the main HCL file (--config); empty for none.
	MainFile string
	// DropInDir holds *.hcl drop-ins (--config-dir), merged over MainFile
	// in file-name order; files starting with "." are skipped. Empty for none.
	DropInDir string
	// Environ is the environment as os.Environ returns it; only MICROLET_
	// variables are read. Nil reads none.
	Environ []string
	// Flags is a parsed flag set carrying the flags of RegisterFlags; only
	// flags the user set override. Nil for none.
	Flags *pflag.FlagSet
}

// Load reads the configuration: built-in defaults < MainFile < drop-ins <
// environment < flags. It fills in derived defaults and validates the
// result. On failure the error is Errors, listing every problem found.
func Load(opts LoadOptions) (*Config, error) {
	ld := &loader{k: koanf.New("."), positions: map[string]Position{}, declared: map[string]Position{}}

	defaults := agentSchema.tree(reflect.ValueOf(Defaults()).Elem())
	ld.add(ld.load(confmap.Provider(defaults, ""), nil, &layer{spell: quoteName}))
	if opts.MainFile != "" {
		ld.loadFile(opts.MainFile)
	}
	if opts.DropInDir != "" {
		ld.loadDropIns(opts.DropInDir)
	}
	envProvider, envSource := envLayer(opts.Environ)
	ld.add(ld.load(envProvider, nil, envSource))
	if opts.Flags != nil {
		flagProvider, flagSource := flagLayer(opts.Flags)
		ld.add(ld.load(flagProvider, nil, flagSource))
	}

	cfg := ld.decode()
	if err := cfg.resolve(); err != nil {
		ld.errs = append(ld.errs, err)
	}
	ld.errs = append(ld.errs, cfg.validate()...)
	if len(ld.errs) > 0 {
		return nil, ld.errs
	}
	return cfg, nil
}

// loader merges the sources in order into one koanf instance.
type loader struct {
	k *koanf.Koanf
	// positions says where each key was last set.
	positions map[string]Position
	// declared says where each plugin block ("plugin.<kind>.<name>") first appeared.
	declared map[string]Position
	errs     Errors
}

func (ld *loader) add(errs Errors, err error) {
	ld.errs = append(ld.errs, errs...)
	if err != nil {
		ld.errs = append(ld.errs, &Error{Message: err.Error()})
	}
}

// load merges one source after checking it, returning what it got wrong.
// err is a failure to read or parse the source at all.
func (ld *loader) load(p koanf.Provider, pa koanf.Parser, l *layer) (errs Errors, err error) {
	err = ld.k.Load(p, pa, koanf.WithMergeFunc(func(src, dest map[string]any) error {
		errs = l.check(src)
		ld.remember(l, src)
		maps.Merge(src, dest)
		return nil
	}))
	return errs, err
}

func (ld *loader) loadFile(path string) {
	p := newHCLParser(path)
	errs, err := ld.load(file.Provider(path), p, &layer{positions: p.positions, spell: quoteName})
	errs = append(errs, p.errs...)
	var syntax *Error
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &syntax):
		errs = append(errs, syntax)
	case errors.As(err, &pathErr):
		errs = append(errs, &Error{Position: Position{File: path}, Message: "cannot read config file: " + pathErr.Err.Error()})
	case err != nil:
		errs = append(errs, &Error{Position: Position{File: path}, Message: err.Error()})
	}
	errs.sortByPosition()
	ld.errs = append(ld.errs, errs...)
}

// loadDropIns loads dir/*.hcl in file-name order, as the kubelet does its
// --config-dir.
func (ld *loader) loadDropIns(dir string) {
	entries, err := os.ReadDir(dir) // sorted by file name
	if err != nil {
		msg := err.Error()
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			msg = pathErr.Err.Error()
		}
		ld.errs = append(ld.errs, &Error{Position: Position{File: dir}, Message: "cannot read config directory: " + msg})
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".hcl" {
			continue
		}
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err == nil && info.IsDir() {
			continue
		}
		ld.loadFile(path)
	}
}

// remember records where a checked source set its keys.
func (ld *loader) remember(l *layer, src map[string]any) {
	for key, pos := range l.positions {
		ld.positions[key] = pos
	}
	kinds, _ := src[pluginKey].(map[string]any)
	for kind, names := range kinds {
		names, _ := names.(map[string]any)
		for name := range names {
			key := joinKey(joinKey(pluginKey, kind), name)
			if _, ok := ld.declared[key]; !ok {
				ld.declared[key] = l.positionOf(key)
			}
		}
	}
}

// decode builds the Config from the merged, checked sources.
func (ld *loader) decode() *Config {
	raw := ld.k.Raw()
	cfg := &Config{positions: ld.positions}
	agentSchema.decode(raw, reflect.ValueOf(cfg).Elem())
	kinds, _ := raw[pluginKey].(map[string]any)
	for _, kind := range sortedKeys(kinds) {
		names, _ := kinds[kind].(map[string]any)
		for _, name := range sortedKeys(names) {
			block, _ := names[name].(map[string]any)
			key := joinKey(joinKey(pluginKey, kind), name)
			p := Plugin{Kind: kind, Name: name, Position: ld.declared[key]}
			pluginSchema.decode(block, reflect.ValueOf(&p).Elem())
			cfg.Plugins = append(cfg.Plugins, p)
		}
	}
	return cfg
}

// resolve fills in the defaults that depend on other keys and normalizes
// values as the kubelet does.
func (c *Config) resolve() *Error {
	if c.ImageServiceEndpoint == "" {
		c.ImageServiceEndpoint = c.ContainerRuntimeEndpoint
	}
	if c.PodPushSocket == "" {
		c.PodPushSocket = filepath.Join(c.RootDir, "pods.sock")
	}
	if c.CertDir == "" {
		c.CertDir = filepath.Join(c.RootDir, "pki")
	}
	for i := range c.Plugins {
		p := &c.Plugins[i]
		if p.Binary == "" {
			p.Binary = "microlet-" + p.Kind + "-" + p.Name
		}
		p.SHA256 = strings.ToLower(p.SHA256)
	}
	if c.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return &Error{Key: "node_name", Message: "not set, and the host name cannot be read: " + err.Error()}
		}
		c.NodeName = host
	}
	// The kubelet lowercases and trims the node name, overridden or not.
	c.NodeName = strings.ToLower(strings.TrimSpace(c.NodeName))
	return nil
}
