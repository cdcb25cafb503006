// Command testcore is a core that only hosts plugins, for tests and
// benchmarks: it starts the plugins named on its command line through
// core/pluginhost, prints one line per plugin and a "ready" line to stdout,
// and waits for SIGTERM or SIGINT.
//
//	plugin kind=eviction name=alpha pid=1234
//	ready pid=1200
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/pluginhost"
)

func main() {
	dir := flag.String("dir", "", "plugin directory")
	socketDir := flag.String("socket-dir", "", "plugin socket directory")
	plugins := flag.String("plugins", "", "comma-separated kind/name list")
	gomaxprocs := flag.Int("gomaxprocs", 1, "GOMAXPROCS, as the core's config sets it")
	logLevel := flag.String("log-level", "info", "log level")
	flag.Parse()
	runtime.GOMAXPROCS(*gomaxprocs)

	logger := hclog.New(&hclog.LoggerOptions{Name: "testcore", Level: hclog.LevelFromString(*logLevel), Output: os.Stderr})
	if err := run(logger, *dir, *socketDir, *plugins); err != nil {
		logger.Error("testcore failed", "error", err)
		os.Exit(1)
	}
}

func run(logger hclog.Logger, dir, socketDir, plugins string) error {
	var specs []pluginhost.Spec
	for _, item := range strings.Split(plugins, ",") {
		kind, name, ok := strings.Cut(item, "/")
		if !ok {
			return fmt.Errorf("-plugins %q: expected kind/name items", plugins)
		}
		specs = append(specs, pluginhost.Spec{Kind: pluginhost.Kind(kind), Name: name})
	}
	host, err := pluginhost.New(pluginhost.Options{Dir: dir, SocketDir: socketDir, Logger: logger})
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	if err := host.Reconcile(context.Background(), specs); err != nil {
		host.Close(context.Background())
		return err
	}
	for _, st := range host.Status() {
		fmt.Printf("plugin kind=%s name=%s pid=%d\n", st.Kind, st.Name, st.PID)
	}
	fmt.Printf("ready pid=%d\n", os.Getpid())
	<-signals
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return host.Close(ctx)
}
