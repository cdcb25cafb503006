package containerlogs

import (
	"errors"
	"fmt"
	"io"
	"math"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var (
	// errLimitReached ends a read that wrote LimitBytes.
	errLimitReached = errors.New("byte limit reached")
	// errShortWrite: a writer took less than it was given.
	errShortWrite = errors.New("short write")
)

// logWriter writes entries as the options say, upstream's logWriter: lines
// before Since are skipped, a timestamp starts each new line when asked,
// and output stops at LimitBytes, cutting the last line.
type logWriter struct {
	stdout, stderr io.Writer
	opts           Options
	remain         int64
}

func newLogWriter(stdout, stderr io.Writer, opts Options) *logWriter {
	w := &logWriter{stdout: stdout, stderr: stderr, opts: opts, remain: math.MaxInt64}
	if opts.LimitBytes >= 0 {
		w.remain = opts.LimitBytes
	}
	return w
}

// write writes one entry; addPrefix says it starts a line, so it gets the
// timestamp. A stream nobody asked for (nil writer) is dropped and counts
// toward no limit.
func (w *logWriter) write(e *Entry, addPrefix bool) error {
	if e.Timestamp.Before(w.opts.Since) {
		return nil
	}
	var out io.Writer
	switch e.Stream {
	case runtimeapi.Stdout:
		out = w.stdout
	case runtimeapi.Stderr:
		out = w.stderr
	default:
		return fmt.Errorf("unexpected stream type %q", e.Stream)
	}
	if out == nil {
		return nil
	}
	line := e.Content
	if w.opts.Timestamps && addPrefix {
		line = append(append([]byte(e.Timestamp.Format(timeFormatOut)), ' '), line...)
	}
	if int64(len(line)) > w.remain {
		line = line[:w.remain]
	}
	n, err := out.Write(line)
	w.remain -= int64(n)
	switch {
	case err != nil:
		return err
	case n < len(line):
		return errShortWrite
	case w.remain <= 0:
		return errLimitReached
	}
	return nil
}
