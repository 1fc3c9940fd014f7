package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
)

// cpioWriter writes the "newc" cpio format that the kernel unpacks as an
// initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
// Timestamps and owners are zero so that the same input gives the same
// archive.
type cpioWriter struct {
	w    *bufio.Writer
	n    int64 // bytes written, for padding
	ino  uint32
	dirs map[string]bool // directories written
}

const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioChar = 0o020000
)

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), dirs: map[string]bool{".": true, "/": true}}
}

// header writes one entry header and its padded name.
func (c *cpioWriter) header(name string, mode uint32, size int64, rdevMajor, rdevMinor uint32) error {
	c.ino++
	nlink := 1
	if mode&cpioDir != 0 {
		nlink = 2
	}
	_, err := fmt.Fprintf(c.w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	if err != nil {
		return err
	}
	c.n += 110
	if err := c.write([]byte(name + "\x00")); err != nil {
		return err
	}
	return c.pad()
}

func (c *cpioWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return err
}

func (c *cpioWriter) pad() error {
	if r := c.n % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// Dir adds a directory and any missing parents; the kernel's unpacker
// needs a file's directory before the file.
func (c *cpioWriter) Dir(name string) error {
	if c.dirs[name] {
		return nil
	}
	if err := c.Dir(path.Dir(name)); err != nil {
		return err
	}
	c.dirs[name] = true
	return c.header(name, cpioDir|0o755, 0, 0, 0)
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, major, minor uint32) error {
	if err := c.Dir(path.Dir(name)); err != nil {
		return err
	}
	return c.header(name, cpioChar|0o600, 0, major, minor)
}

// Bytes adds a regular file with the given content.
func (c *cpioWriter) Bytes(name string, perm uint32, data []byte) error {
	if err := c.Dir(path.Dir(name)); err != nil {
		return err
	}
	if err := c.header(name, cpioFile|perm, int64(len(data)), 0, 0); err != nil {
		return err
	}
	if err := c.write(data); err != nil {
		return err
	}
	return c.pad()
}

// File adds a regular file copied from the host file src.
func (c *cpioWriter) File(name string, perm uint32, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := c.Dir(path.Dir(name)); err != nil {
		return err
	}
	if err := c.header(name, cpioFile|perm, st.Size(), 0, 0); err != nil {
		return err
	}
	n, err := io.Copy(c.w, f)
	c.n += n
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed size while archiving", src)
	}
	return c.pad()
}

// Close writes the trailer and flushes.
func (c *cpioWriter) Close() error {
	if err := c.header("TRAILER!!!", 0, 0, 0, 0); err != nil {
		return err
	}
	return c.w.Flush()
}
