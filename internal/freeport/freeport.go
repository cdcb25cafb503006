// Package freeport hands tests and dev tools TCP ports on 127.0.0.1 for the
// programs they start (microlet's node API, kube-apiserver, etcd, ...).
//
// A port the kernel picked for a listener on :0 comes from its ephemeral
// range, the same range it draws the source ports of outgoing connections
// from: between closing the probe and the program binding the port, any of
// the many connections a test run makes can take it ("bind: address already
// in use"). The ports here come from below that range, where only programs
// that ask for a port by number bind, and are chosen at random so that
// concurrent test processes rarely ask for the same one.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the lowest port handed out: above the registered ports most
// daemons use.
const lowest = 20000

// rangeFile holds the kernel's ephemeral port range ("32768\t60999").
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// given are the ports this process has handed out: a port is free until
// the program it was picked for binds it, so two calls a moment apart
// (a node's API port and its read-only port, picked by different helpers)
// could otherwise get the same one.
var given struct {
	sync.Mutex
	ports map[int]bool
}

// Ports returns n distinct TCP ports on 127.0.0.1 that were free a moment
// ago, lie below the kernel's ephemeral range, and were never handed out
// before in this process.
func Ports(n int) ([]int, error) {
	ceiling := ephemeralLow()
	if ceiling <= lowest {
		return nil, fmt.Errorf("freeport: the ephemeral port range starts at %d, leaving nothing above %d below it", ceiling, lowest)
	}
	given.Lock()
	defer given.Unlock()
	if given.ports == nil {
		given.ports = map[int]bool{}
	}
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000*n {
			return nil, errors.New("freeport: no free port found below the ephemeral range")
		}
		port := lowest + rand.IntN(ceiling-lowest)
		if given.ports[port] || !free(port) {
			continue
		}
		given.ports[port] = true
		out = append(out, port)
	}
	return out, nil
}

// Port is one port of Ports.
func Port() (int, error) {
	ports, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralLow is the start of the kernel's ephemeral range; Linux's
// default when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return low
}
