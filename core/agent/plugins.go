package agent

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/nodeapi/healthz"
	"github.com/microlet/microlet/core/pluginhost"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
)

// PluginHostOptions are the plugin host's options as the config sets them.
func PluginHostOptions(cfg *config.Config, logger hclog.Logger, host hostv1.HostServiceServer) pluginhost.Options {
	ph := cfg.PluginHost
	return pluginhost.Options{
		Dir:               cfg.PluginDir,
		SocketDir:         filepath.Join(cfg.RootDir, "plugin-sockets"),
		Logger:            logger,
		LogLevel:          cfg.LogLevel,
		NodeName:          cfg.NodeName,
		HostService:       host,
		StartTimeout:      ph.StartTimeout,
		CallTimeout:       ph.CallTimeout,
		HealthInterval:    ph.HealthInterval,
		HealthTimeout:     ph.HealthTimeout,
		HealthFailures:    ph.HealthFailures,
		RestartBackoff:    ph.RestartBackoff,
		RestartBackoffMax: ph.RestartBackoffMax,
		RestartBudget:     ph.RestartBudget,
		RestartWindow:     ph.RestartWindow,
		DrainTimeout:      ph.DrainTimeout,
		WatchDir:          ph.WatchPluginDir,
	}
}

// PluginSpecs are the plugin blocks of the config as the host takes them.
func PluginSpecs(cfg *config.Config) []pluginhost.Spec {
	specs := make([]pluginhost.Spec, 0, len(cfg.Plugins))
	for _, p := range cfg.Plugins {
		specs = append(specs, pluginhost.Spec{
			Kind:   pluginhost.Kind(p.Kind),
			Name:   p.Name,
			Binary: p.Binary,
			SHA256: p.SHA256,
			Args:   p.Args,
			Env:    p.Env,
			Config: p.Config,
		})
	}
	return specs
}

// pluginChecks keeps one healthz check per plugin slot in step with the
// host: a slot that has used up its restart budget fails its check, and so
// does one whose process serves something other than the config asks for
// (a swap to the config's spec failed and the old process kept serving).
type pluginChecks struct {
	healthz *healthz.Healthz
	host    *pluginhost.Host
	names   map[string]bool
}

func (c *pluginChecks) sync() {
	want := map[string]bool{}
	for _, st := range c.host.Status() {
		name := fmt.Sprintf("plugin-%s-%s", st.Kind, st.Name)
		want[name] = true
		if c.names[name] {
			continue
		}
		kind, slotName := st.Kind, st.Name
		c.healthz.Add(name, func() error { return c.check(kind, slotName) })
	}
	for name := range c.names {
		if !want[name] {
			c.healthz.Remove(name)
		}
	}
	c.names = want
}

func (c *pluginChecks) check(kind pluginhost.Kind, name string) error {
	for _, st := range c.host.Status() {
		if st.Kind != kind || st.Name != name {
			continue
		}
		if st.State == pluginhost.Failed {
			return fmt.Errorf("plugin %s/%s failed (%s); the core applies the %s fallback: %s",
				kind, name, st.LastError, kind, kind.Fallback())
		}
		if st.ConfigNotApplied != "" {
			return fmt.Errorf("plugin %s/%s (pid %d) does not run what the config asks: %s",
				kind, name, st.PID, st.ConfigNotApplied)
		}
		return nil
	}
	return fmt.Errorf("plugin %s/%s is no longer configured", kind, name)
}
