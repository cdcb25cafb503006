// Command k8s-rdma-shared-dp is Mellanox's RDMA shared device plugin
// (github.com/Mellanox/k8s-rdma-shared-dev-plugin, its cmd/k8s-rdma-shared-dp
// main) with one step left out: ValidateRdmaSystemMode, which asks the
// kernel's RDMA netlink family and fails on a kernel built without
// InfiniBand (CONFIG_INFINIBAND unset, as on the test VMs). Everything the
// e2e test exercises is the plugin's own code, run as released:
// configuration, device discovery, its gRPC server on
// /var/lib/kubelet/device-plugins/<resource>.sock, registration on
// kubelet.sock, and its watch, which registers again only when its own
// socket disappears (every 5 s it checks). With no Mellanox device it
// offers its resource with no devices.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/Mellanox/k8s-rdma-shared-dev-plugin/pkg/resources"
)

func main() {
	configFile := flag.String("config-file", resources.DefaultConfigFilePath, "path to device plugin config file")
	flag.Parse()

	rm := resources.NewResourceManager(*configFile, false)
	steps := []struct {
		what string
		run  func() error
	}{
		{"read the config", rm.ReadConfig},
		{"validate the config", rm.ValidateConfigs},
		{"discover host devices", rm.DiscoverHostDevices},
		{"initialize resource servers", rm.InitServers},
		{"start the resource servers", rm.StartAllServers},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			log.Fatalf("%s: %v", s.what, err)
		}
	}
	stopUpdates := rm.PeriodicUpdate()
	log.Println("All servers started.")

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	s := <-sigs
	log.Printf("Received signal %q, shutting down.", s)
	stopUpdates()
	if err := rm.StopAllServers(); err != nil {
		log.Fatalf("stop the resource servers: %v", err)
	}
}
