package containerlogs

import (
	"bytes"
	"strings"
	"testing"
)

func TestTailStart(t *testing.T) {
	line := strings.Repeat("a", tailBlock)
	data := []byte(strings.Repeat(line+"\n", 4) + line[tailBlock/2:]) // the last line is incomplete
	short := []byte("one\ntwo\nthree\n")
	for _, tc := range []struct {
		name string
		data []byte
		n    int64
		want int64
	}{
		{name: "all", data: data, n: -1, want: 0},
		{name: "none: after the last newline", data: data, n: 0, want: int64(len(line)+1) * 4},
		{name: "one line, the incomplete one not counted", data: data, n: 1, want: int64(len(line)+1) * 3},
		{name: "more lines than the file has", data: data, n: 9999, want: 0},
		{name: "two of three short lines", data: short, n: 2, want: 4},
		{name: "exactly all short lines", data: short, n: 3, want: 0},
		{name: "empty file", data: nil, n: 5, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tailStart(bytes.NewReader(tc.data), tc.n)
			if err != nil || got != tc.want {
				t.Errorf("tailStart(%d) = %d, %v; want %d", tc.n, got, err, tc.want)
			}
		})
	}
}
