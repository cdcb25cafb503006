// Command devnode runs a private containerd node (internal/devnode) until
// interrupted:
//
//	go run ./hack/devnode up [-dir DIR]
//
// It prints the CRI socket, a crictl command line for it and the pod
// subnet, waits for Ctrl-C (or SIGTERM) and then removes everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/devnode"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "up" {
		fmt.Fprintln(os.Stderr, "usage: devnode up [-dir DIR]")
		os.Exit(2)
	}
	flags := flag.NewFlagSet("devnode up", flag.ExitOnError)
	dir := flags.String("dir", "", "directory for the node's files (new or empty; removed on exit); default a temporary one")
	flags.Parse(os.Args[2:])

	log := hclog.New(&hclog.LoggerOptions{Name: "devnode", Level: hclog.Info})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	node, err := devnode.Start(ctx, devnode.Options{Dir: *dir, Logger: log})
	if err != nil {
		log.Error("start", "error", err)
		os.Exit(1)
	}
	fmt.Printf("socket:  %s\n", node.Socket)
	fmt.Printf("crictl:  crictl --runtime-endpoint %s --image-endpoint %s\n", node.Endpoint, node.Endpoint)
	fmt.Printf("subnet:  %s (bridge %s)\n", node.Subnet, node.Bridge)
	fmt.Printf("images:  %s (sandbox), %s\n", node.PauseImage, node.TestImage)
	fmt.Printf("dir:     %s\n", node.Dir)
	fmt.Println("Ctrl-C stops the node and removes everything.")
	<-ctx.Done()
	if err := node.Close(); err != nil {
		log.Error("cleanup", "error", err)
		os.Exit(1)
	}
}
