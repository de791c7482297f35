package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// System V IPC through the table: what processes share, and what their
// ends (exit, exec) do to the objects.

// shmNattch is a segment's shm_nattch (IPC_STAT's, at byte 88 of
// struct shmid64_ds).
func shmNattch(t *testing.T, g *fake.Guest, id uintptr) uint64 {
	t.Helper()
	ds := g.Alloc(112)
	if _, errno := g.Call(unix.SYS_SHMCTL, id, unix.IPC_STAT, ds); errno != 0 {
		t.Errorf("shmctl(IPC_STAT): %v", errno)
	}
	return g.ReadU64(ds + 88)
}

func TestASegmentIsSharedWithAChildAndItsAttachesEndWithExitAndExec(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.AddProgram("/bin/idle", func(g *fake.Guest) {})
	runIn(t, s, func(g *fake.Guest) {
		id, errno := g.Call(unix.SYS_SHMGET, unix.IPC_PRIVATE, 8192, 0o600)
		if errno != 0 {
			t.Fatalf("shmget: %v", errno)
		}
		addr, errno := g.Call(unix.SYS_SHMAT, id, 0, 0)
		if errno != 0 {
			t.Errorf("shmat: %v", errno)
			return
		}
		var inChild uint64
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.WriteU64(addr, 77)
			inChild = shmNattch(t, g, id)
		})
		g.Wait(pid, 0)
		if inChild != 2 {
			t.Errorf("shm_nattch while a child had it too = %d, want 2", inChild)
		}
		if v := g.ReadU64(addr); v != 77 {
			t.Errorf("what the child wrote, read by the parent = %d, want 77", v)
		}
		if n := shmNattch(t, g, id); n != 1 {
			t.Errorf("shm_nattch after the child exited = %d, want 1", n)
		}
		r, w := guestPipe(t, g, unix.O_CLOEXEC)
		pid, _ = g.Fork(func(g *fake.Guest) {
			g.Call(unix.SYS_CLOSE, r)
			g.Call(unix.SYS_EXECVE, g.CString("/bin/idle"), g.CStrings([]string{"idle"}), g.CStrings(nil))
		})
		g.Call(unix.SYS_CLOSE, w)
		g.Call(unix.SYS_READ, r, g.Alloc(1), 1) // the exec closed the write end
		if n := shmNattch(t, g, id); n != 1 {
			t.Errorf("shm_nattch once a child exec'd = %d, want 1 (exec drops its attach)", n)
		}
		g.Wait(pid, 0)
		g.Call(unix.SYS_SHMCTL, id, unix.IPC_RMID, 0)
		g.Call(unix.SYS_SHMDT, addr)
		if _, errno := g.Call(unix.SYS_SHMCTL, id, unix.IPC_STAT, g.Alloc(112)); errno != unix.EINVAL {
			t.Errorf("IPC_STAT of a removed segment after its last shmdt: %v, want EINVAL", errno)
		}
	})
}

// semOp makes semop with one operation.
func semOp(g *fake.Guest, id uintptr, num uint16, op int16, flg int16) unix.Errno {
	sb := g.Alloc(6)
	g.Write(sb, []byte{byte(num), byte(num >> 8), byte(op), byte(uint16(op) >> 8), byte(flg), byte(uint16(flg) >> 8)})
	_, errno := g.Call(unix.SYS_SEMOP, id, sb, 1)
	return errno
}

func semVal(g *fake.Guest, id uintptr) int {
	v, _ := g.Call(unix.SYS_SEMCTL, id, 0, linuxabi.GETVAL, 0)
	return int(v)
}

func TestUndoIsSharedByThreadsAndAppliedWhenTheProcessEndsNotAThread(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		id, _ := g.Call(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, 0o600)
		var afterThread int
		pid, _ := g.Fork(func(g *fake.Guest) {
			// fake's Thread clones with CLONE_SYSVSEM, as glibc does.
			_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
				semOp(g, id, 0, 4, linuxabi.SEM_UNDO)
			})
			g.Join(tidAddr)
			afterThread = semVal(g, id)
		})
		g.Wait(pid, 0)
		if afterThread != 4 {
			t.Errorf("value after the thread that added 4 with SEM_UNDO exited = %d, want 4", afterThread)
		}
		if v := semVal(g, id); v != 0 {
			t.Errorf("value after its process exited = %d, want 0", v)
		}
	})
}

func TestAForkedChildStartsWithoutItsParentsUndoList(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		id, _ := g.Call(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, 0o600)
		semOp(g, id, 0, 2, linuxabi.SEM_UNDO)
		pid, _ := g.Fork(func(g *fake.Guest) {})
		g.Wait(pid, 0)
		if v := semVal(g, id); v != 2 {
			t.Errorf("value after a child forked by the adjusting process exited = %d, want 2", v)
		}
	})
}

func TestASignalEndsASemopWaitWithEINTREvenWithSARestart(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	runIn(t, s, func(g *fake.Guest) {
		h := s.Platform.Handler(func(g *fake.Guest) {})
		g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: h, Flags: linuxabi.SA_RESTART})
		id, _ := g.Call(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, 0o600)
		self, _ := g.Call(unix.SYS_GETPID)
		pid, _ := g.Fork(func(g *fake.Guest) {
			for {
				if n, _ := g.Call(unix.SYS_SEMCTL, id, 0, linuxabi.GETNCNT, 0); n == 1 {
					break
				}
				g.Call(unix.SYS_SCHED_YIELD)
			}
			g.Call(unix.SYS_KILL, self, uintptr(unix.SIGUSR1))
		})
		if errno := semOp(g, id, 0, -1, 0); errno != unix.EINTR {
			t.Errorf("semop interrupted by a SA_RESTART handler: %v, want EINTR", errno)
		}
		g.Wait(pid, 0)
	})
}
