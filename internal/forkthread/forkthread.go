// Package forkthread runs process starts on one OS thread that stays
// locked for the life of the process. Linux sends a child's parent-death
// signal (Pdeathsig) when the thread that forked it exits, not the
// process, and Go retires threads: idle ones, and any whose locked
// goroutine returns without unlocking (netlink and netns code does that on
// purpose). A child started from an arbitrary goroutine would then be
// killed at random; started from this thread it dies with the process.
package forkthread

import (
	"runtime"
	"sync"
)

var thread struct {
	once  sync.Once
	calls chan func()
}

// Do runs start (an exec.Cmd's Start, say) on the fork thread and returns
// its error.
func Do(start func() error) error {
	thread.once.Do(func() {
		thread.calls = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for call := range thread.calls {
				call()
			}
		}()
	})
	errc := make(chan error, 1)
	thread.calls <- func() { errc <- start() }
	return <-errc
}
