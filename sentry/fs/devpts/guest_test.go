package devpts_test

import (
	"encoding/binary"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/devpts"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// Pseudo-terminals as guest programs use them, through the system calls:
// posix_openpt, grantpt, unlockpt and ptsname, controlling terminals and
// job control, hang-up. The rules were checked on Linux 6.18 with C
// programs (conformance/programs/pty_*.c run the same checks natively).

// sandbox mounts /dev, a devpts at /dev/pts with runc's options, and /proc,
// as the boot code does.
func sandbox(t *testing.T) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	dev, _ := devfs.New(unix.Timespec{}, nil)
	s.Mount("/dev", dev, "devtmpfs", unix.MS_NOSUID)
	opts, _, err := devpts.ParseOptions(devpts.RuncOptions)
	if err != nil {
		t.Fatal(err)
	}
	s.Mount("/dev/pts", devpts.New(opts, time.Now()), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC)
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	return s
}

func run(t *testing.T, prog fake.Program) {
	t.Helper()
	s := sandbox(t)
	if st := s.Run(prog); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func call(t *testing.T, g *fake.Guest, what string, nr uintptr, args ...uintptr) uintptr {
	t.Helper()
	r, errno := g.Call(nr, args...)
	if errno != 0 {
		t.Errorf("%s: %v", what, errno)
	}
	return r
}

func open(g *fake.Guest, name string, flags int) (uintptr, unix.Errno) {
	return g.Call(unix.SYS_OPENAT, atFDCWD, g.CString(name), uintptr(flags))
}

// openpt is posix_openpt, grantpt (nothing to do on devpts) and unlockpt;
// it returns the master and ptsname's answer.
func openpt(t *testing.T, g *fake.Guest) (master uintptr, name string) {
	t.Helper()
	m, errno := open(g, "/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY)
	if errno != 0 {
		t.Fatalf("open /dev/ptmx: %v", errno)
	}
	n := g.Alloc(4)
	call(t, g, "TIOCGPTN", unix.SYS_IOCTL, m, unix.TIOCGPTN, n)
	name = "/dev/pts/" + strconv.Itoa(int(g.ReadU32(n)))
	g.WriteU32(n, 0)
	call(t, g, "TIOCSPTLCK", unix.SYS_IOCTL, m, unix.TIOCSPTLCK, n)
	return m, name
}

func write(t *testing.T, g *fake.Guest, fd uintptr, s string) {
	t.Helper()
	b := g.Alloc(uintptr(len(s) + 1))
	g.Write(b, []byte(s))
	if n, errno := g.Call(unix.SYS_WRITE, fd, b, uintptr(len(s))); errno != 0 || int(n) != len(s) {
		t.Errorf("write %q: %d, %v", s, n, errno)
	}
}

func read(g *fake.Guest, fd uintptr, n int) (string, unix.Errno) {
	b := g.Alloc(uintptr(n))
	r, errno := g.Call(unix.SYS_READ, fd, b, uintptr(n))
	if errno != 0 {
		return "", errno
	}
	out := make([]byte, r)
	g.Read(b, out)
	return string(out), 0
}

func ioctlInt(g *fake.Guest, fd uintptr, req uint, v int32) (int32, unix.Errno) {
	p := g.Alloc(4)
	g.WriteU32(p, uint32(v))
	_, errno := g.Call(unix.SYS_IOCTL, fd, uintptr(req), p)
	return int32(g.ReadU32(p)), errno
}

func getpid(g *fake.Guest) int32 {
	r, _ := g.Call(unix.SYS_GETPID)
	return int32(r)
}

// fork runs child in a new process and returns its pid.
func fork(t *testing.T, g *fake.Guest, child fake.Program) int {
	t.Helper()
	pid, errno := g.Fork(child)
	if errno != 0 {
		t.Fatalf("fork: %v", errno)
	}
	return pid
}

// waitExit reaps pid and checks it exited with code.
func waitExit(t *testing.T, g *fake.Guest, pid, code int) {
	t.Helper()
	_, ws, errno := g.Wait(pid, 0)
	if errno != 0 || !ws.Exited() || ws.ExitStatus() != code {
		t.Errorf("child %d: status %#x (%v), want exit %d", pid, ws, errno, code)
	}
}

func exit(g *fake.Guest, code int) { g.Call(unix.SYS_EXIT_GROUP, uintptr(code)) }

// pipe2 returns a pipe's ends.
func pipe2(t *testing.T, g *fake.Guest) (r, w uintptr) {
	p := g.Alloc(8)
	call(t, g, "pipe2", unix.SYS_PIPE2, p, 0)
	return uintptr(g.ReadU32(p)), uintptr(g.ReadU32(p + 4))
}

func TestTheReplicaIsLockedUntilUnlockptAndPtsnameNamesIt(t *testing.T) {
	run(t, func(g *fake.Guest) {
		m, errno := open(g, "/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY)
		if errno != 0 {
			t.Fatalf("open /dev/ptmx: %v", errno)
		}
		n, _ := ioctlInt(g, m, unix.TIOCGPTN, -1)
		if n != 0 {
			t.Errorf("first pty is number %d, want 0", n)
		}
		if _, errno := open(g, "/dev/pts/0", unix.O_RDWR|unix.O_NOCTTY); errno != unix.EIO {
			t.Errorf("open of a locked replica: %v, want EIO", errno)
		}
		if _, errno := g.Call(unix.SYS_IOCTL, m, unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY); errno != unix.EIO {
			t.Errorf("TIOCGPTPEER of a locked replica: %v, want EIO", errno)
		}
		if locked, _ := ioctlInt(g, m, unix.TIOCGPTLCK, 0); locked != 1 {
			t.Errorf("TIOCGPTLCK = %d, want 1", locked)
		}
		ioctlInt(g, m, unix.TIOCSPTLCK, 0)
		r, errno := open(g, "/dev/pts/0", unix.O_RDWR|unix.O_NOCTTY)
		if errno != 0 {
			t.Fatalf("open of an unlocked replica: %v", errno)
		}
		if _, errno := ioctlInt(g, r, unix.TIOCGPTN, 0); errno != unix.ENOTTY {
			t.Errorf("TIOCGPTN on the replica: %v, want ENOTTY", errno)
		}
		var st, fst unix.Stat_t
		buf := g.Alloc(uintptr(binary.Size(st)))
		call(t, g, "stat", unix.SYS_NEWFSTATAT, atFDCWD, g.CString("/dev/pts/0"), buf, 0)
		st = readStat(g, buf)
		call(t, g, "fstat", unix.SYS_FSTAT, r, buf)
		fst = readStat(g, buf)
		if st.Ino != fst.Ino || st.Dev != fst.Dev || st.Rdev != unix.Mkdev(136, 0) || fst.Rdev != st.Rdev {
			t.Errorf("stat %d/%d rdev %#x, fstat %d/%d rdev %#x: ttyname needs them equal, rdev 136:0",
				st.Dev, st.Ino, st.Rdev, fst.Dev, fst.Ino, fst.Rdev)
		}
		if st.Mode != unix.S_IFCHR|0o620 || st.Gid != 5 {
			t.Errorf("replica mode %o gid %d, want %o and 5 (runc's mode=0620,gid=5)", st.Mode, st.Gid, unix.S_IFCHR|0o620)
		}
		m2, _ := openpt(t, g)
		if n, _ := ioctlInt(g, m2, unix.TIOCGPTN, 0); n != 1 {
			t.Errorf("second pty is number %d, want 1", n)
		}
		// /proc/self/fd names the replica as ttyname(3) reads it.
		lbuf := g.Alloc(64)
		k := call(t, g, "readlink", unix.SYS_READLINKAT, atFDCWD, g.CString("/proc/self/fd/"+strconv.Itoa(int(r))), lbuf, 64)
		name := make([]byte, k)
		g.Read(lbuf, name)
		if string(name) != "/dev/pts/0" {
			t.Errorf("/proc/self/fd link %q, want /dev/pts/0", name)
		}
		// The name goes with the master; the number with both ends.
		g.Call(unix.SYS_CLOSE, m)
		if _, errno := open(g, "/dev/pts/0", unix.O_RDWR|unix.O_NOCTTY); errno != unix.ENOENT {
			t.Errorf("open after the master closed: %v, want ENOENT", errno)
		}
		m3, _ := openpt(t, g)
		if n, _ := ioctlInt(g, m3, unix.TIOCGPTN, 0); n != 2 {
			t.Errorf("new pty while 0's replica is open is number %d, want 2", n)
		}
		g.Call(unix.SYS_CLOSE, r)
		m4, _ := openpt(t, g)
		if n, _ := ioctlInt(g, m4, unix.TIOCGPTN, 0); n != 0 {
			t.Errorf("new pty once 0 is closed is number %d, want 0 again", n)
		}
	})
}

func readStat(g *fake.Guest, addr uintptr) unix.Stat_t {
	var st unix.Stat_t
	b := make([]byte, binary.Size(st))
	g.Read(addr, b)
	binary.Read(strings.NewReader(string(b)), binary.LittleEndian, &st)
	return st
}

func TestTIOCGPTPEEROpensTheReplicaWithTheGivenFlags(t *testing.T) {
	run(t, func(g *fake.Guest) {
		m, _ := openpt(t, g)
		fd := call(t, g, "TIOCGPTPEER", unix.SYS_IOCTL, m, unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK)
		if _, errno := read(g, fd, 10); errno != unix.EAGAIN {
			t.Errorf("read of an empty O_NONBLOCK peer: %v, want EAGAIN", errno)
		}
		write(t, g, m, "hi\r")
		if got, _ := read(g, fd, 10); got != "hi\n" {
			t.Errorf("replica read %q, want %q (ICRNL)", got, "hi\n")
		}
		if got, _ := read(g, m, 10); got != "hi\r\n" {
			t.Errorf("master read %q, want the echo %q (ONLCR)", got, "hi\r\n")
		}
	})
}

func TestASessionLeaderOpeningAReplicaWithoutNOCTTYAcquiresIt(t *testing.T) {
	run(t, func(g *fake.Guest) {
		_, name := openpt(t, g)
		child := fork(t, g, func(g *fake.Guest) {
			call(t, g, "setsid", unix.SYS_SETSID)
			if _, errno := open(g, "/dev/tty", unix.O_RDWR); errno != unix.ENXIO {
				t.Errorf("/dev/tty with no controlling terminal: %v, want ENXIO", errno)
			}
			quiet, _ := open(g, name, unix.O_RDWR|unix.O_NOCTTY)
			if _, errno := ioctlInt(g, quiet, unix.TIOCGPGRP, 0); errno != unix.ENOTTY {
				t.Errorf("TIOCGPGRP after an O_NOCTTY open: %v, want ENOTTY", errno)
			}
			r, _ := open(g, name, unix.O_RDWR)
			me := getpid(g)
			if pg, errno := ioctlInt(g, r, unix.TIOCGPGRP, 0); errno != 0 || pg != me {
				t.Errorf("TIOCGPGRP = %d, %v; want the leader's group %d", pg, errno, me)
			}
			if sid, errno := ioctlInt(g, r, unix.TIOCGSID, 0); errno != 0 || sid != me {
				t.Errorf("TIOCGSID = %d, %v; want %d", sid, errno, me)
			}
			if _, errno := open(g, "/dev/tty", unix.O_RDWR); errno != 0 {
				t.Errorf("/dev/tty with a controlling terminal: %v", errno)
			}
			stat := readFile(t, g, "/proc/self/stat")
			f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
			wantNr := strconv.Itoa(136<<8 | int(mustAtoi(name[len("/dev/pts/"):])))
			if f[4] != wantNr || f[5] != strconv.Itoa(int(me)) {
				t.Errorf("/proc/self/stat tty_nr %s tpgid %s, want %s and %d", f[4], f[5], wantNr, me)
			}
			// setsid drops it (in a child: the leader cannot setsid).
			grandchild := fork(t, g, func(g *fake.Guest) {
				call(t, g, "setsid", unix.SYS_SETSID)
				if _, errno := open(g, "/dev/tty", unix.O_RDWR); errno != unix.ENXIO {
					t.Errorf("/dev/tty after setsid: %v, want ENXIO", errno)
				}
			})
			waitExit(t, g, grandchild, 0)
		})
		waitExit(t, g, child, 0)
	})
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func readFile(t *testing.T, g *fake.Guest, name string) string {
	fd, errno := open(g, name, unix.O_RDONLY)
	if errno != 0 {
		t.Errorf("open %s: %v", name, errno)
		return ""
	}
	defer g.Call(unix.SYS_CLOSE, fd)
	s, _ := read(g, fd, 4096)
	return s
}

func TestTIOCSCTTYNeedsASessionLeaderWithoutATerminalAndAFreeTerminal(t *testing.T) {
	s := sandbox(t)
	s.Start(func(g *fake.Guest) {
		m, name := openpt(t, g)
		r, _ := open(g, name, unix.O_RDWR|unix.O_NOCTTY)
		// init is a session leader without a terminal, but keep it out:
		// the rules are tried in children.
		nonLeader := fork(t, g, func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_IOCTL, r, unix.TIOCSCTTY, 0); errno != unix.EPERM {
				t.Errorf("TIOCSCTTY by a process that leads no session: %v, want EPERM", errno)
			}
		})
		waitExit(t, g, nonLeader, 0)
		rd, wr := pipe2(t, g)
		done, release := pipe2(t, g)
		holder := fork(t, g, func(g *fake.Guest) {
			call(t, g, "setsid", unix.SYS_SETSID)
			call(t, g, "TIOCSCTTY", unix.SYS_IOCTL, r, unix.TIOCSCTTY, 0)
			if _, errno := g.Call(unix.SYS_IOCTL, r, unix.TIOCSCTTY, 0); errno != 0 {
				t.Errorf("TIOCSCTTY again by its session's leader: %v, want success", errno)
			}
			m2, name2 := openpt(t, g)
			r2, _ := open(g, name2, unix.O_RDWR|unix.O_NOCTTY)
			if _, errno := g.Call(unix.SYS_IOCTL, r2, unix.TIOCSCTTY, 0); errno != unix.EPERM {
				t.Errorf("TIOCSCTTY by a leader that has a terminal: %v, want EPERM", errno)
			}
			g.Call(unix.SYS_CLOSE, m2)
			write(t, g, wr, "x")
			read(g, done, 1)
		})
		read(g, rd, 1)
		thief := fork(t, g, func(g *fake.Guest) {
			call(t, g, "setsid", unix.SYS_SETSID)
			if _, errno := g.Call(unix.SYS_IOCTL, r, unix.TIOCSCTTY, 0); errno != unix.EPERM {
				t.Errorf("TIOCSCTTY of another session's terminal: %v, want EPERM", errno)
			}
			if _, errno := g.Call(unix.SYS_IOCTL, r, unix.TIOCSCTTY, 1); errno != unix.EPERM {
				t.Errorf("TIOCSCTTY(1) without CAP_SYS_ADMIN: %v, want EPERM", errno)
			}
		})
		waitExit(t, g, thief, 0)
		write(t, g, release, "x")
		waitExit(t, g, holder, 0)
		g.Call(unix.SYS_CLOSE, m)
	}, kerneltest.Init{UID: 1000})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

// inSession runs body in a child that leads a new session whose
// controlling terminal is the replica of a new pty; the parent gets the
// master and runs parent meanwhile. The child stays until parent has
// returned; it must then exit 0.
func inSession(t *testing.T, g *fake.Guest, body func(g *fake.Guest, replica uintptr), parent func(g *fake.Guest, master uintptr, child int)) {
	t.Helper()
	m, name := openpt(t, g)
	ready, readyW := pipe2(t, g)
	finish, finishW := pipe2(t, g)
	child := fork(t, g, func(g *fake.Guest) {
		g.Call(unix.SYS_CLOSE, m)
		call(t, g, "setsid", unix.SYS_SETSID)
		r, errno := open(g, name, unix.O_RDWR)
		if errno != 0 {
			t.Errorf("open %s: %v", name, errno)
		}
		write(t, g, readyW, "x")
		body(g, r)
		read(g, finish, 1)
	})
	read(g, ready, 1)
	parent(g, m, child)
	write(t, g, finishW, "x")
	waitExit(t, g, child, 0)
}

func TestTheInterruptCharacterSignalsTheForegroundGroup(t *testing.T) {
	s := sandbox(t)
	var got atomic.Int32
	h := s.Platform.Handler(func(g *fake.Guest) { got.Store(int32(g.Regs().Rdi)) })
	s.Start(func(g *fake.Guest) {
		// Handlers before the fork: a signal may come before the child runs.
		g.Sigaction(unix.SIGINT, fake.SigAction{Handler: h})
		var interrupted atomic.Bool
		inSession(t, g, func(g *fake.Guest, r uintptr) {
			// A ^C may come before the read: then the next one ends it.
			if _, errno := read(g, r, 10); errno != unix.EINTR {
				t.Errorf("read interrupted by ^C: %v, want EINTR", errno)
			}
			interrupted.Store(true)
			if got.Load() != int32(unix.SIGINT) {
				t.Errorf("handler got signal %d, want SIGINT", got.Load())
			}
		}, func(g *fake.Guest, m uintptr, child int) {
			for !interrupted.Load() {
				write(t, g, m, "\x03")
				time.Sleep(10 * time.Millisecond)
			}
			if echo, _ := read(g, m, 10); !strings.HasPrefix(echo, "^C") {
				t.Errorf("echo of ^C %q", echo)
			}
		})
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

// stoppedBy forks, from the session leader, a process that moves to a
// group of its own (the background) and runs bg; it returns the signal
// that stopped it, or 0 if it exited (with code 0).
func stoppedBy(t *testing.T, g *fake.Guest, bg fake.Program) unix.Signal {
	t.Helper()
	pid := fork(t, g, func(g *fake.Guest) {
		call(t, g, "setpgid", unix.SYS_SETPGID, 0, 0)
		bg(g)
	})
	_, ws, errno := g.Wait(pid, unix.WUNTRACED)
	if errno != 0 {
		t.Fatalf("wait: %v", errno)
	}
	if ws.Stopped() {
		g.Call(unix.SYS_KILL, uintptr(pid), uintptr(unix.SIGKILL))
		g.Wait(pid, 0)
		return ws.StopSignal()
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("background process ended with %#x", ws)
	}
	return 0
}

func TestBackgroundProcessesAreStoppedByJobControl(t *testing.T) {
	run(t, func(g *fake.Guest) {
		inSession(t, g, func(g *fake.Guest, r uintptr) {
			if sig := stoppedBy(t, g, func(g *fake.Guest) { read(g, r, 1) }); sig != unix.SIGTTIN {
				t.Errorf("a background reader was stopped by %v, want SIGTTIN", sig)
			}
			if sig := stoppedBy(t, g, func(g *fake.Guest) { write(t, g, r, "x") }); sig != 0 {
				t.Errorf("a background writer without TOSTOP was stopped by %v", sig)
			}
			if sig := stoppedBy(t, g, func(g *fake.Guest) {
				g.Sigaction(unix.SIGTTIN, fake.SigAction{Handler: 1}) // SIG_IGN
				if _, errno := read(g, r, 1); errno != unix.EIO {
					t.Errorf("background read ignoring SIGTTIN: %v, want EIO", errno)
				}
			}); sig != 0 {
				t.Errorf("a reader ignoring SIGTTIN was stopped by %v", sig)
			}
			tios := g.Alloc(64)
			call(t, g, "TCGETS", unix.SYS_IOCTL, r, unix.TCGETS, tios)
			if sig := stoppedBy(t, g, func(g *fake.Guest) {
				g.Call(unix.SYS_IOCTL, r, unix.TCSETS, tios)
			}); sig != unix.SIGTTOU {
				t.Errorf("a background tcsetattr was stopped by %v, want SIGTTOU", sig)
			}
			if sig := stoppedBy(t, g, func(g *fake.Guest) {
				pg := g.Alloc(4)
				g.WriteU32(pg, uint32(getpid(g)))
				g.Call(unix.SYS_IOCTL, r, unix.TIOCSPGRP, pg)
			}); sig != unix.SIGTTOU {
				t.Errorf("a background TIOCSPGRP was stopped by %v, want SIGTTOU", sig)
			}
			lflag := g.ReadU32(tios + 12)
			g.WriteU32(tios+12, lflag|unix.TOSTOP)
			call(t, g, "TCSETS TOSTOP", unix.SYS_IOCTL, r, unix.TCSETS, tios)
			if sig := stoppedBy(t, g, func(g *fake.Guest) { write(t, g, r, "x") }); sig != unix.SIGTTOU {
				t.Errorf("a background writer with TOSTOP was stopped by %v, want SIGTTOU", sig)
			}
		}, func(g *fake.Guest, m uintptr, child int) {})
	})
}

func TestTIOCSPGRPMovesTheForegroundWithinTheSessionOnly(t *testing.T) {
	run(t, func(g *fake.Guest) {
		other := fork(t, g, func(g *fake.Guest) { g.Call(unix.SYS_PAUSE) })
		// The session's leader moves the foreground only after the
		// outsider below has seen it where setsid left it.
		asked, askedW := pipe2(t, g)
		inSession(t, g, func(g *fake.Guest, r uintptr) {
			read(g, asked, 1)
			me := getpid(g)
			rd, wr := pipe2(t, g)
			member := fork(t, g, func(g *fake.Guest) {
				call(t, g, "setpgid", unix.SYS_SETPGID, 0, 0)
				write(t, g, wr, "x")
				g.Call(unix.SYS_PAUSE)
			})
			read(g, rd, 1)
			if _, errno := ioctlInt(g, r, unix.TIOCSPGRP, int32(member)); errno != 0 {
				t.Errorf("TIOCSPGRP to a group of the session: %v", errno)
			}
			if pg, _ := ioctlInt(g, r, unix.TIOCGPGRP, 0); pg != int32(member) {
				t.Errorf("foreground %d, want %d", pg, member)
			}
			// The leader is in the background now: it must not be stopped
			// for its change, so SIGTTOU is ignored.
			g.Sigaction(unix.SIGTTOU, fake.SigAction{Handler: 1})
			if _, errno := ioctlInt(g, r, unix.TIOCSPGRP, int32(other)); errno != unix.EPERM {
				t.Errorf("TIOCSPGRP to another session's group: %v, want EPERM", errno)
			}
			if _, errno := ioctlInt(g, r, unix.TIOCSPGRP, 99999); errno != unix.ESRCH {
				t.Errorf("TIOCSPGRP to no group: %v, want ESRCH", errno)
			}
			if _, errno := ioctlInt(g, r, unix.TIOCSPGRP, me); errno != 0 {
				t.Errorf("TIOCSPGRP back: %v", errno)
			}
			g.Call(unix.SYS_KILL, uintptr(member), uintptr(unix.SIGKILL))
			g.Wait(member, 0)
		}, func(g *fake.Guest, m uintptr, child int) {
			if pg, errno := ioctlInt(g, m, unix.TIOCGPGRP, 0); errno != 0 || pg != int32(child) {
				t.Errorf("TIOCGPGRP on the master = %d, %v; want %d (anyone may ask the master)", pg, errno, child)
			}
			if _, errno := ioctlInt(g, m, unix.TIOCSPGRP, int32(child)); errno != unix.ENOTTY {
				t.Errorf("TIOCSPGRP through the master by an outsider: %v, want ENOTTY", errno)
			}
			write(t, g, askedW, "x")
		})
		g.Call(unix.SYS_KILL, uintptr(other), uintptr(unix.SIGKILL))
		g.Wait(other, 0)
	})
}

func TestClosingTheMasterHangsUpTheSession(t *testing.T) {
	s := sandbox(t)
	var hup, cont atomic.Bool
	hh := s.Platform.Handler(func(*fake.Guest) { hup.Store(true) })
	ch := s.Platform.Handler(func(*fake.Guest) { cont.Store(true) })
	s.Start(func(g *fake.Guest) {
		// Handlers before the fork: a signal may come before the child runs.
		g.Sigaction(unix.SIGHUP, fake.SigAction{Handler: hh})
		g.Sigaction(unix.SIGCONT, fake.SigAction{Handler: ch})
		inSession(t, g, func(g *fake.Guest, r uintptr) {
			if _, errno := read(g, r, 10); errno != unix.EIO && errno != unix.EINTR {
				t.Errorf("a read waiting at the hang-up: %v, want EIO (or EINTR for the SIGHUP)", errno)
			}
			for !hup.Load() || !cont.Load() {
				g.Call(unix.SYS_SCHED_YIELD)
			}
			if got, errno := read(g, r, 10); errno != 0 || got != "" {
				t.Errorf("read after the hang-up: %q, %v; want end of file", got, errno)
			}
			b := g.Alloc(1)
			if _, errno := g.Call(unix.SYS_WRITE, r, b, 1); errno != unix.EIO {
				t.Errorf("write after the hang-up: %v, want EIO", errno)
			}
			if _, errno := ioctlInt(g, r, unix.TIOCGWINSZ, 0); errno != unix.EIO {
				t.Errorf("ioctl after the hang-up: %v, want EIO", errno)
			}
			if _, errno := open(g, "/dev/tty", unix.O_RDWR); errno != unix.ENXIO {
				t.Errorf("/dev/tty after the hang-up: %v, want ENXIO", errno)
			}
		}, func(g *fake.Guest, m uintptr, child int) {
			time.Sleep(20 * time.Millisecond) // let the child wait in read
			g.Call(unix.SYS_CLOSE, m)
		})
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

func TestReadingTheMasterOnceTheReplicaIsClosedGivesTheRestThenEIO(t *testing.T) {
	run(t, func(g *fake.Guest) {
		m, name := openpt(t, g)
		r, _ := open(g, name, unix.O_RDWR|unix.O_NOCTTY)
		write(t, g, r, "zz")
		g.Call(unix.SYS_CLOSE, r)
		if got, errno := read(g, m, 10); got != "zz" || errno != 0 {
			t.Errorf("master read %q, %v; want what the replica wrote", got, errno)
		}
		if _, errno := read(g, m, 10); errno != unix.EIO {
			t.Errorf("master read with no replica: %v, want EIO", errno)
		}
	})
}

func TestAWindowSizeChangeSendsSIGWINCHToTheForeground(t *testing.T) {
	s := sandbox(t)
	var winch atomic.Int32
	h := s.Platform.Handler(func(*fake.Guest) { winch.Add(1) })
	s.Start(func(g *fake.Guest) {
		// Handlers before the fork: a signal may come before the child runs.
		g.Sigaction(unix.SIGWINCH, fake.SigAction{Handler: h})
		inSession(t, g, func(g *fake.Guest, r uintptr) {
			read(g, r, 10) // until the parent types a line
			if winch.Load() != 1 {
				t.Errorf("%d SIGWINCH for one change and one same size, want 1", winch.Load())
			}
			ws := g.Alloc(8)
			call(t, g, "TIOCGWINSZ", unix.SYS_IOCTL, r, unix.TIOCGWINSZ, ws)
			if rows, cols := g.ReadU32(ws)&0xffff, g.ReadU32(ws)>>16; rows != 24 || cols != 80 {
				t.Errorf("size %dx%d, want 24x80", rows, cols)
			}
		}, func(g *fake.Guest, m uintptr, child int) {
			ws := g.Alloc(8)
			g.WriteU32(ws, 24|80<<16)
			call(t, g, "TIOCSWINSZ", unix.SYS_IOCTL, m, unix.TIOCSWINSZ, ws)
			call(t, g, "TIOCSWINSZ", unix.SYS_IOCTL, m, unix.TIOCSWINSZ, ws)
			time.Sleep(20 * time.Millisecond)
			write(t, g, m, "\n")
		})
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

func TestTIOCNOTTYByTheLeaderHangsUpTheForegroundAndFreesTheTerminal(t *testing.T) {
	s := sandbox(t)
	var hup atomic.Bool
	h := s.Platform.Handler(func(*fake.Guest) { hup.Store(true) })
	s.Start(func(g *fake.Guest) {
		// Handlers before the fork: a signal may come before the child runs.
		g.Sigaction(unix.SIGHUP, fake.SigAction{Handler: h})
		inSession(t, g, func(g *fake.Guest, r uintptr) {
			call(t, g, "TIOCNOTTY", unix.SYS_IOCTL, r, unix.TIOCNOTTY, 0)
			for !hup.Load() {
				g.Call(unix.SYS_SCHED_YIELD)
			}
			if _, errno := ioctlInt(g, r, unix.TIOCGPGRP, 0); errno != unix.ENOTTY {
				t.Errorf("TIOCGPGRP after TIOCNOTTY: %v, want ENOTTY", errno)
			}
			if _, errno := g.Call(unix.SYS_IOCTL, r, unix.TIOCNOTTY, 0); errno != unix.ENOTTY {
				t.Errorf("TIOCNOTTY without a terminal: %v, want ENOTTY", errno)
			}
			call(t, g, "TIOCSCTTY", unix.SYS_IOCTL, r, unix.TIOCSCTTY, 0)
		}, func(g *fake.Guest, m uintptr, child int) {})
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

// atFDCWD is AT_FDCWD as a system call argument.
var atFDCWD = func() uintptr { v := int64(unix.AT_FDCWD); return uintptr(v) }()
