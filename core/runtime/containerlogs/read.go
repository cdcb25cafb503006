package containerlogs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Upstream's follow settings (k8s.io/cri-client/pkg/logs): the file is
// checked at least this often even when no change is reported, and a
// watch that errs this many times in a row ends the follow.
const (
	forceCheckPeriod = time.Second
	watchErrorBudget = 5
)

// Log is one container's log file.
type Log struct {
	// Dir is the pod's log directory. The file is opened below it through
	// os.Root: neither ".." nor a symlink can lead the reader out of it.
	Dir string
	// Name is the file's path relative to Dir, such as "app/0.log".
	Name string
	// Running reports whether the container still writes the log. A
	// follow ends once it does not, after reading what the file holds.
	Running func(ctx context.Context) (bool, error)
}

// Open opens the log for reading as opts say, positioned at the lines
// to write; errors opening it come before anything is written.
func Open(l Log, opts Options) (*Reader, error) {
	root, err := os.OpenRoot(l.Dir)
	if err != nil {
		return nil, fmt.Errorf("open the pod's log directory: %w", err)
	}
	f, err := root.Open(l.Name)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("open log file %q: %w", l.Name, err)
	}
	r := &Reader{log: l, root: root, opts: opts, newLine: true}
	if err := r.open(f); err != nil {
		r.Close()
		return nil, err
	}
	start, err := tailStart(f, opts.TailLines)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("tail %d lines of log file %q: %w", opts.TailLines, l.Name, err)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		r.Close()
		return nil, fmt.Errorf("seek to %d in log file %q: %w", start, l.Name, err)
	}
	r.in.Reset(f)
	return r, nil
}

// Reader is an open log.
type Reader struct {
	log  Log
	root *os.Root
	opts Options
	w    *logWriter

	file *os.File
	info os.FileInfo // of file, to tell a rotation
	in   *bufio.Reader
	// next is the file that replaced file after a rotation, opened once
	// seen; once nextReady, file is read to its end once more before
	// switching.
	next      *os.File
	nextReady bool
	// pending is the start of a line not yet complete in the file.
	pending []byte
	// newLine: the next entry starts a line (its timestamp is printed).
	newLine bool
	// lines left to write when tailing without following; -1: no bound.
	linesLeft int64
	watcher   *fsnotify.Watcher
}

// open makes f the file being read.
func (r *Reader) open(f *os.File) error {
	if r.file != nil {
		r.file.Close()
	}
	r.file = f
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat log file %q: %w", r.log.Name, err)
	}
	r.info = info
	if r.in == nil {
		r.in = bufio.NewReader(f)
	} else {
		r.in.Reset(f)
	}
	return nil
}

// Close releases the files and the watch.
func (r *Reader) Close() {
	for _, f := range []*os.File{r.file, r.next} {
		if f != nil {
			f.Close()
		}
	}
	if r.watcher != nil {
		r.watcher.Close()
	}
	r.root.Close()
}

// Copy writes the log's lines that the options select to stdout and
// stderr, each to the stream the container wrote it on; a nil writer drops
// its stream. Lines that do not parse are skipped. Following, it reads on
// as the file grows and, when the log is rotated (the file renamed and a
// new one made in its place), reads the old file to its end before going
// on with the new one, until the container stops or ctx ends.
func (r *Reader) Copy(ctx context.Context, stdout, stderr io.Writer) error {
	r.w = newLogWriter(stdout, stderr, r.opts)
	r.linesLeft = -1
	if r.opts.TailLines >= 0 && !r.opts.Follow {
		r.linesLeft = r.opts.TailLines
	}
	running := true
	for r.linesLeft != 0 {
		chunk, err := r.in.ReadBytes('\n')
		r.pending = append(r.pending, chunk...)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read log file %q: %w", r.log.Name, err)
		}
		if err == nil {
			if done, err := r.line(); done || err != nil {
				return err
			}
			continue
		}
		// At the end of the file.
		if !r.opts.Follow {
			// What is left is a last line without its newline.
			_, err := r.line()
			return err
		}
		if r.nextReady {
			// The old file was read to its end after the runtime began
			// writing the new one.
			if done, err := r.switchToNext(); done || err != nil {
				return err
			}
			continue
		}
		if running && r.watcher == nil {
			if err := r.watch(); err != nil {
				return err
			}
			continue // read again: a write may have come before the watch
		}
		// A container that writes no more has its rotated-to file read too.
		ready, err := r.rotated(!running)
		if err != nil {
			return err
		}
		if ready {
			continue
		}
		if !running {
			_, err := r.line()
			return err
		}
		if running, err = r.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// line writes the pending line; done: the byte limit was reached.
func (r *Reader) line() (done bool, err error) {
	line := r.pending
	r.pending = r.pending[:0]
	if len(line) == 0 {
		return false, nil
	}
	e, err := ParseCRILog(line)
	if err != nil {
		return false, nil // upstream skips lines that do not parse
	}
	switch err := r.w.write(&e, r.newLine); {
	case errors.Is(err, errLimitReached):
		return true, nil
	case err != nil:
		return true, err
	}
	if r.linesLeft > 0 {
		r.linesLeft--
	}
	r.newLine = len(e.Content) == 0 || e.Content[len(e.Content)-1] == '\n'
	return false, nil
}

// watch starts watching the log file's directory: writes wake the
// follow, and a rotation creates the file anew there.
func (r *Reader) watch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch log file %q: %w", r.log.Name, err)
	}
	dir := filepath.Join(r.log.Dir, filepath.Dir(r.log.Name))
	if err := w.Add(dir); err != nil {
		w.Close()
		return fmt.Errorf("watch log directory %q: %w", dir, err)
	}
	r.watcher = w
	return nil
}

// rotated says whether the log's name now names another file than the
// one being read that the old one is complete for: the runtime has
// written to the new file (it makes the file before it stops writing the
// old one, so lines may still land in the old one while the new one is
// empty), or final (the container writes no more). The new file is kept
// open as next from when it is first seen.
func (r *Reader) rotated(final bool) (ready bool, err error) {
	if r.next == nil {
		info, err := r.root.Stat(r.log.Name)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // renamed away; the runtime has not reopened it yet
		}
		if err != nil {
			return false, fmt.Errorf("stat log file %q: %w", r.log.Name, err)
		}
		if os.SameFile(info, r.info) {
			return false, nil
		}
		next, err := r.root.Open(r.log.Name)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("open rotated log file %q: %w", r.log.Name, err)
		}
		r.next = next
	}
	if !final {
		info, err := r.next.Stat()
		if err != nil {
			return false, fmt.Errorf("stat rotated log file %q: %w", r.log.Name, err)
		}
		if info.Size() == 0 {
			return false, nil
		}
	}
	r.nextReady = true
	return true, nil
}

// switchToNext goes on with the new file once the old one is read to its
// end; done: the byte limit was reached.
func (r *Reader) switchToNext() (done bool, err error) {
	next := r.next
	r.next, r.nextReady = nil, false
	if done, err := r.line(); done || err != nil {
		next.Close()
		return done, err
	}
	return false, r.open(next)
}

// wait blocks until the log's directory changes or forceCheckPeriod
// passes. It first asks whether the container still runs: one that does
// not writes nothing more, and the follow reads to the end and stops.
func (r *Reader) wait(ctx context.Context) (running bool, err error) {
	running, err = r.log.Running(ctx)
	if err != nil || !running {
		return false, err
	}
	errs := 0
	timer := time.NewTimer(forceCheckPeriod)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-r.watcher.Events:
			return true, nil
		case err := <-r.watcher.Errors:
			if errs++; errs > watchErrorBudget {
				return false, fmt.Errorf("watch log file %q: %w", r.log.Name, err)
			}
		case <-timer.C:
			return true, nil
		}
	}
}
