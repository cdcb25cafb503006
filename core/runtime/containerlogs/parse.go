// Package containerlogs reads container logs in the CRI log format, as the
// kubelet serves them on /containerLogs: the parser, the PodLogOptions
// (tail, since, limit, timestamps, streams) and following a log as it
// grows and rotates. Files are opened below the pod's log directory through
// os.Root, so a symlink a container planted cannot lead the reader out of it.
package containerlogs

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Timestamp layouts, upstream's (k8s.io/cri-client/pkg/logs): runtimes
// write RFC 3339 with up to nine fractional digits; the reader prints
// exactly nine.
const (
	timeFormatIn  = "2006-01-02T15:04:05.999999999Z07:00"
	timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"
)

// Entry is one line of a CRI log.
type Entry struct {
	Timestamp time.Time
	Stream    runtimeapi.LogStreamType
	// Partial: the runtime split a long line and this is a part of it that
	// is not the last (tag P).
	Partial bool
	// Content is what the container wrote. A full line keeps its newline,
	// as upstream's parser leaves it; a partial one never has one.
	Content []byte
}

// ParseCRILog parses one line of a CRI log, with or without its newline:
//
//	2016-10-06T00:17:09.669794202Z stdout P log content 1
//	2016-10-06T00:17:09.669794203Z stderr F log content 2
//
// The tag may carry more ':'-separated tags after P or F, for forward
// compatibility; only the first counts. Content aliases line.
func ParseCRILog(line []byte) (Entry, error) {
	var e Entry
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return e, errors.New("timestamp is not found")
	}
	var err error
	if e.Timestamp, err = time.Parse(timeFormatIn, string(ts)); err != nil {
		return e, fmt.Errorf("unexpected timestamp format %q: %w", timeFormatIn, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return e, errors.New("stream type is not found")
	}
	e.Stream = runtimeapi.LogStreamType(stream)
	if e.Stream != runtimeapi.Stdout && e.Stream != runtimeapi.Stderr {
		return e, fmt.Errorf("unexpected stream type %q", e.Stream)
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return e, errors.New("log tag is not found")
	}
	first, _, _ := bytes.Cut(tags, []byte(runtimeapi.LogTagDelimiter))
	e.Partial = runtimeapi.LogTag(first) == runtimeapi.LogTagPartial
	if e.Partial {
		content = bytes.TrimSuffix(content, []byte{'\n'})
	}
	e.Content = content
	return e, nil
}
