package goferfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/goferfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// mountHostDir serves dir with an in-process gofer and mounts it at
// /mnt in s, writable.
func mountHostDir(t *testing.T, s *kerneltest.Sandbox, dir string) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- gofer.Serve(fds[1], dir, false)
		unix.Close(fds[1])
	}()
	c := gofer.NewClient(fds[0])
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	d, err := goferfs.New(c, s.MemFile, false)
	if err != nil {
		t.Fatal(err)
	}
	s.Mkdir("/mnt", 0o755)
	s.Mount("/mnt", d, "ext4", 0)
}

// TestSharedMappingsOfHostFiles: a MAP_SHARED mapping of a file on a host
// tree and read(2)/write(2) see each other's changes, and what is written
// through the mapping reaches the host file on msync and when the mapping
// goes.
func TestSharedMappingsOfHostFiles(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "db-shm")
	if err := os.WriteFile(host, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	onHost := func() string {
		b, _ := os.ReadFile(host)
		return string(b)
	}
	s := kerneltest.New(t, syscalls.NewTable())
	mountHostDir(t, s, dir)
	st := s.Run(func(g *fake.Guest) {
		fd, errno := g.Call(unix.SYS_OPEN, g.CString("/mnt/db-shm"), unix.O_RDWR)
		if errno != 0 {
			t.Errorf("open: %v", errno)
			return
		}
		m, errno := g.Call(unix.SYS_MMAP, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED, fd, 0)
		if errno != 0 {
			t.Errorf("mmap: %v", errno)
			return
		}
		buf := g.Alloc(4096)
		g.Write(buf, []byte("by write"))
		g.Call(unix.SYS_PWRITE64, fd, buf, 8, 100)
		got := make([]byte, 8)
		if g.Read(m+100, got); string(got) != "by write" {
			t.Errorf("the mapping after pwrite reads %q", got)
		}
		if c := onHost(); c[100:108] != "by write" {
			t.Errorf("pwrite did not reach the host: %q", c[100:108])
		}
		g.Write(m+4096, []byte("by mapping"))
		n, _ := g.Call(unix.SYS_PREAD64, fd, buf, 10, 4096)
		got = make([]byte, n)
		if g.Read(buf, got); string(got) != "by mapping" {
			t.Errorf("pread after a write through the mapping: %q", got)
		}
		if _, errno := g.Call(unix.SYS_MSYNC, m, 8192, unix.MS_SYNC); errno != 0 {
			t.Errorf("msync: %v", errno)
		}
		if c := onHost(); c[4096:4106] != "by mapping" {
			t.Errorf("after msync the host file holds %q", c[4096:4106])
		}
		g.Write(m+6000, []byte("at munmap"))
		g.Call(unix.SYS_MUNMAP, m, 8192)
		if c := onHost(); c[6000:6009] != "at munmap" {
			t.Errorf("after munmap the host file holds %q", c[6000:6009])
		}
		if c := onHost(); len(c) != 8192 {
			t.Errorf("the host file grew to %d bytes", len(c))
		}
	})
	if st.Code != 0 {
		t.Errorf("status %+v; log:\n%s", st, s.Log())
	}
}
