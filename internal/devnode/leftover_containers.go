package devnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// runcDeleteTimeout bounds one `runc delete --force`.
const runcDeleteTimeout = 30 * time.Second

// deleteRuncContainers kills and deletes the containers still in the node's
// runc state: containerd died, hung or ran out of Close's time before
// removing them. The shim runs runc with the root <runcRoot>/<containerd
// namespace>. Each runc call has its own deadline, not Close's: a teardown
// that spent its time on a slow runtime (a pod of 1000 containers) must
// still delete them. Whatever runc did, each container's init process is
// then checked by its PID and start time, killed if it still runs, and
// reported if it survives, so that no container process outlives the node
// unnoticed.
func (n *Node) deleteRuncContainers() error {
	namespaces, err := os.ReadDir(n.runcRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range namespaces {
		root := filepath.Join(n.runcRoot, ns.Name())
		containers, err := os.ReadDir(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range containers {
			init, initErr := runcInit(filepath.Join(root, c.Name(), "state.json"))
			ctx, cancel := context.WithTimeout(context.Background(), runcDeleteTimeout)
			out, err := exec.CommandContext(ctx, "runc", "--root", root, "delete", "--force", c.Name()).CombinedOutput()
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("runc delete %s: %w: %s", c.Name(), err, strings.TrimSpace(string(out))))
			} else {
				n.log.Warn("deleted a container containerd left behind", "id", c.Name())
			}
			if initErr != nil {
				if err != nil {
					errs = append(errs, fmt.Errorf("container %s: %w", c.Name(), initErr))
				}
				continue
			}
			if err := init.killIfRunning(); err != nil {
				errs = append(errs, fmt.Errorf("container %s: %w", c.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// runcInitProcess is a container's init process as runc's state.json
// records it: its PID and its start time in clock ticks since boot, which
// together name one process for good.
type runcInitProcess struct {
	PID   int    `json:"init_process_pid"`
	Start uint64 `json:"init_process_start"`
}

func runcInit(stateFile string) (runcInitProcess, error) {
	var p runcInitProcess
	data, err := os.ReadFile(stateFile)
	if err != nil {
		return p, fmt.Errorf("read runc's state: %w", err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("parse runc's state %s: %w", stateFile, err)
	}
	return p, nil
}

// killIfRunning SIGKILLs the process if it still runs: killing a PID
// namespace's init kills everything in it.
func (p runcInitProcess) killIfRunning() error {
	if p.PID <= 0 {
		return nil
	}
	if start, err := processStart(p.PID); err != nil || start != p.Start {
		return nil // gone, or the PID names another process now
	}
	if err := adoptProcess(p.PID).kill(); err != nil {
		return fmt.Errorf("its process survived runc delete and SIGKILL: %w", err)
	}
	return nil
}
