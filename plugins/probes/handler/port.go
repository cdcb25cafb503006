package handler

import (
	"fmt"
	"strconv"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// resolvePort is upstream's probe.ResolveContainerPort: a port by number,
// or by the name of one of the container's ports, or else by a name that
// is a number written as a string.
func resolvePort(number int32, name string, ports []*typesv1.ContainerPort) (int, error) {
	port := int(number)
	if name != "" {
		var err error
		if port, err = portByName(name, ports); err != nil {
			return 0, err
		}
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return 0, fmt.Errorf("invalid port number: %d", port)
}

func portByName(name string, ports []*typesv1.ContainerPort) (int, error) {
	for _, p := range ports {
		if p.GetName() == name {
			return int(p.GetContainerPort()), nil
		}
	}
	if port, err := strconv.Atoi(name); err == nil {
		return port, nil
	}
	return 0, fmt.Errorf("port %q is neither a number nor the name of one of the container's ports", name)
}
