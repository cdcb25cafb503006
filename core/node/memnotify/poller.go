package memnotify

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// errNotOffered means the kernel does not offer a notification here (no
// PSI, no memory.events in a cgroup without the memory controller): nothing
// to arm, and nothing wrong.
var errNotOffered = errors.New("not offered")

// watchSpec is a kernel notification to arm.
type watchSpec struct {
	key   string
	event Event
	// file is the kernel file the notification is armed on.
	file string
	open func() (*watch, error)
}

// watch is an armed notification: a descriptor that epoll reports ready
// when the kernel fires it.
type watch struct {
	fd     int
	events uint32
	event  Event
	// fired re-arms the descriptor after epoll reported it and says whether
	// it is a notification worth a cycle. An error means the watch is dead
	// (its cgroup was removed): the kernel would report it ready forever.
	fired func() (bool, error)
	// exceeded says whether the level the watch is armed at is passed now:
	// the kernel signals a crossing once, so a watch armed below the usage
	// stays quiet however far usage grows. nil for watches without a level.
	exceeded func() (bool, error)
	// closer closes what the watch holds; closing the descriptor disarms it.
	closer  func()
	release sync.Once
	closed  atomic.Bool
	id      int32
}

// close disarms the watch; it may be called more than once.
func (w *watch) close() {
	w.release.Do(func() {
		w.closed.Store(true)
		w.closer()
	})
}

// poller waits for armed watches with epoll. Go's runtime poller cannot do
// it: it does not wait for EPOLLPRI, which cgroup v2 files signal with.
type poller struct {
	epfd int
	// wake interrupts epoll_wait when the poller closes.
	wake    int
	deliver func(Event)

	mu      sync.Mutex
	watches map[int32]*watch // by id, which epoll carries instead of the fd, so a reused fd is never mistaken for another watch
	nextID  int32
	done    chan struct{}
}

func newPoller(deliver func(Event)) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memnotify: epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("memnotify: eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0}); err != nil {
		unix.Close(wake)
		unix.Close(epfd)
		return nil, fmt.Errorf("memnotify: epoll_ctl: %w", err)
	}
	p := &poller{epfd: epfd, wake: wake, deliver: deliver, watches: map[int32]*watch{}, nextID: 1, done: make(chan struct{})}
	go p.run()
	return p, nil
}

func (p *poller) add(w *watch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.id = p.nextID
	p.nextID++
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, w.fd, &unix.EpollEvent{Events: w.events, Fd: w.id}); err != nil {
		w.close()
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	p.watches[w.id] = w
	return nil
}

func (p *poller) remove(w *watch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop(w)
}

// drop forgets a watch and disarms it; p.mu is held.
func (p *poller) drop(w *watch) {
	if _, ok := p.watches[w.id]; ok {
		delete(p.watches, w.id)
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	}
	w.close()
}

// close stops the loop and waits for it.
func (p *poller) close() error {
	var one [8]byte
	one[0] = 1
	if _, err := unix.Write(p.wake, one[:]); err != nil {
		return fmt.Errorf("memnotify: waking the poller: %w", err)
	}
	<-p.done
	return errors.Join(unix.Close(p.wake), unix.Close(p.epfd))
}

func (p *poller) run() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 16)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == 0 {
				return
			}
			if w, fire := p.fired(ev.Fd); fire {
				p.deliver(w.event)
			}
		}
	}
}

// fired handles a ready watch. A dead one is dropped, and reported: what
// watched it is gone, and a cycle will arm what is wanted now.
func (p *poller) fired(id int32) (*watch, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.watches[id]
	if w == nil {
		return nil, false
	}
	fire, err := w.fired()
	if err != nil {
		p.drop(w)
		return w, true
	}
	return w, fire
}
