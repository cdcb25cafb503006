package containerlogs

import (
	"bytes"
	"io"
)

// tailBlock is how much of the file is read at a time, backwards.
const tailBlock = 1024

// tailStart is the offset of the last n lines of f, upstream's
// findTailLineStartIndex: n < 0 is the start of the file, and a last line
// without a newline is not counted as a line.
func tailStart(f io.ReadSeeker, n int64) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	var left, count int64
	buf := make([]byte, tailBlock)
	for right := size; right > 0 && count <= n; right -= tailBlock {
		left = right - tailBlock
		if left < 0 {
			left = 0
			buf = make([]byte, right)
		}
		if _, err := f.Seek(left, io.SeekStart); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(f, buf); err != nil {
			return 0, err
		}
		count += int64(bytes.Count(buf, []byte{'\n'}))
	}
	for ; count > n; count-- {
		idx := bytes.IndexByte(buf, '\n') + 1
		buf = buf[idx:]
		left += int64(idx)
	}
	return left, nil
}
