package containerlogs

import (
	"bytes"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseCRILog(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	for _, tc := range []struct {
		name    string
		line    string
		want    Entry
		wantErr string
	}{
		{name: "full stdout line keeps its newline", line: "2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Content: []byte("log content 1\n")}},
		{name: "full stderr line", line: "2016-10-06T00:17:09.669794202Z stderr F log content 2\n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stderr, Content: []byte("log content 2\n")}},
		{name: "partial line loses its newline", line: "2016-10-06T00:17:09.669794202Z stdout P part\n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Partial: true, Content: []byte("part")}},
		{name: "more tags after the first", line: "2016-10-06T00:17:09.669794202Z stdout P:TAG1:TAG2 part\n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Partial: true, Content: []byte("part")}},
		{name: "empty content", line: "2016-10-06T00:17:09.669794202Z stdout F \n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Content: []byte("\n")}},
		{name: "no newline at the end of the file", line: "2016-10-06T00:17:09.669794202Z stdout F last",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Content: []byte("last")}},
		{name: "content with spaces", line: "2016-10-06T00:17:09.669794202Z stdout F a b  c\n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Content: []byte("a b  c\n")}},
		{name: "time zone offset", line: "2016-10-06T02:17:09.669794202+02:00 stdout F x\n",
			want: Entry{Timestamp: ts, Stream: runtimeapi.Stdout, Content: []byte("x\n")}},
		{name: "no space at all", line: "nospace", wantErr: "timestamp is not found"},
		{name: "not a timestamp", line: "yesterday stdout F x", wantErr: "unexpected timestamp format"},
		{name: "docker json is not CRI", line: `{"log":"x","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}`, wantErr: "timestamp is not found"},
		{name: "unknown stream", line: "2016-10-06T00:17:09Z stdin F x", wantErr: `unexpected stream type "stdin"`},
		{name: "no stream", line: "2016-10-06T00:17:09Z stdout", wantErr: "stream type is not found"},
		{name: "no tag", line: "2016-10-06T00:17:09Z stdout F", wantErr: "log tag is not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCRILog([]byte(tc.line))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseCRILog(%q) error %v, want %q", tc.line, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCRILog(%q): %v", tc.line, err)
			}
			if !got.Timestamp.Equal(tc.want.Timestamp) || got.Stream != tc.want.Stream || got.Partial != tc.want.Partial ||
				!bytes.Equal(got.Content, tc.want.Content) {
				t.Errorf("ParseCRILog(%q) = %+v, want %+v", tc.line, got, tc.want)
			}
		})
	}
}

// FuzzParseCRILog: any bytes parse or fail without a panic; what parses is
// a known stream, and its content is the end of the line (less the newline
// of a partial line).
func FuzzParseCRILog(f *testing.F) {
	for _, seed := range []string{
		"2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
		"2016-10-06T00:17:09.669794202Z stderr P:x part\n",
		"2016-10-06T00:17:09+02:00 stdout F \n",
		"2016-10-06T00:17:09Z stdout",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseCRILog(line)
		if err != nil {
			return
		}
		if e.Stream != runtimeapi.Stdout && e.Stream != runtimeapi.Stderr {
			t.Fatalf("stream %q", e.Stream)
		}
		end := line
		if e.Partial {
			end = bytes.TrimSuffix(line, []byte{'\n'})
		}
		if !bytes.HasSuffix(end, e.Content) {
			t.Fatalf("content %q is not the end of the line %q", e.Content, line)
		}
		if e.Partial && bytes.HasSuffix(e.Content, []byte{'\n'}) {
			t.Fatalf("partial content %q ends in a newline", e.Content)
		}
	})
}
