package main

import (
	"bytes"
	"io"
)

// prefixWriter writes each line with a prefix; the runner writes whole lines.
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var buf bytes.Buffer
	for line := range bytes.Lines(b) {
		buf.WriteString(p.prefix)
		buf.Write(line)
	}
	if _, err := p.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
