package podruntime

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/runtime/containerlogs"
)

// Termination message limits, upstream's (pkg/kubelet/container/runtime.go).
const (
	maxTerminationMessageLength    = 4 << 10
	maxTerminationMessageLogLength = 2 << 10
	maxTerminationMessageLogLines  = 80
	// logTailChunk is how much of a log is read at a time, backwards, to
	// find its last lines.
	logTailChunk = 8 << 10
)

// withTerminationMessage is an exited container's message, as upstream's
// convertToKubeContainerStatus: the runtime's message, then what the
// container wrote to its termination message file (at most the last 4096
// bytes), or, under FallbackToLogsOnError when it failed and wrote nothing,
// the tail of its log (80 lines, 2048 bytes).
func withTerminationMessage(s *runtimeapi.ContainerStatus, a annotatedContainer) string {
	// A container that could not even start has no log.
	fallbackToLogs := a.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError &&
		s.ExitCode != 0 && s.Reason != "ContainerCannotRun"
	message, checkLogs := readTerminationMessage(s.Mounts, a.TerminationMessagePath, fallbackToLogs)
	if checkLogs {
		message = logTail(s.LogPath)
	}
	switch {
	case message == "":
		return s.Message
	case s.Message == "":
		return message
	}
	return s.Message + ": " + message
}

// readTerminationMessage reads the file mounted at the termination message
// path, and reports whether the log must be read instead.
func readTerminationMessage(mounts []*runtimeapi.Mount, path string, fallbackToLogs bool) (string, bool) {
	if path == "" {
		return "", fallbackToLogs
	}
	for _, m := range mounts {
		if m.ContainerPath != path {
			continue
		}
		data, err := readTail(m.HostPath, maxTerminationMessageLength)
		if errors.Is(err, os.ErrNotExist) {
			return "", fallbackToLogs
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", m.HostPath, err), false
		}
		return string(data), fallbackToLogs && len(data) == 0
	}
	return "", fallbackToLogs
}

// readTail reads at most the last max bytes of a file.
func readTail(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	offset := max(fi.Size()-limit, 0)
	data := make([]byte, fi.Size()-offset)
	n, err := f.ReadAt(data, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:n], nil
}

// logTail is the end of a container's CRI log as text: the content of its
// last 80 lines, cut to the last 2048 bytes.
func logTail(path string) string {
	data, err := readLastLines(path, maxTerminationMessageLogLines)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	var out bytes.Buffer
	for line := range bytes.Lines(data) {
		entry, err := containerlogs.ParseCRILog(line)
		if err != nil {
			continue // as upstream, a line that does not parse is skipped
		}
		out.Write(entry.Content)
		if !entry.Partial && !bytes.HasSuffix(entry.Content, []byte{'\n'}) {
			out.WriteByte('\n') // the file's last line, without its newline
		}
	}
	text := out.Bytes()
	if len(text) > maxTerminationMessageLogLength {
		text = text[len(text)-maxTerminationMessageLogLength:]
	}
	return string(text)
}

// readLastLines reads the last n lines of a file, scanning backwards.
func readLastLines(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end := fi.Size()
	var tail []byte
	for start := end; start > 0; {
		size := min(int64(logTailChunk), start)
		start -= size
		chunk := make([]byte, size)
		if _, err := f.ReadAt(chunk, start); err != nil {
			return nil, err
		}
		tail = append(chunk, tail...)
		// n lines end in n newlines, plus the one before them; a final
		// newline ends the last line and starts none.
		if idx := nthLineStart(tail, n); idx >= 0 {
			return tail[idx:], nil
		}
	}
	return tail, nil
}

// nthLineStart is where the last n lines of data start, -1 when data holds
// fewer.
func nthLineStart(data []byte, n int) int {
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := 0; i < n; i++ {
		idx := bytes.LastIndexByte(data[:end], '\n')
		if idx < 0 {
			return -1
		}
		end = idx
	}
	return end + 1
}
