package confine

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// GoferCalls is the gofer's allowlist: the Go runtime's calls, the *at
// family on descriptors it holds (it resolves every name one component at a
// time from a directory it holds, never a path from the root), and its
// sockets to the sentry. It executes nothing and makes no socket.
var GoferCalls = goRuntimeCalls.With(Allowlist{
	call(unix.SYS_SENDMSG, "sendmsg", "answers to the sentry, with the descriptors it opened", ""),
	call(unix.SYS_RECVMSG, "recvmsg", "the sentry's requests", ""),
	call(unix.SYS_SHUTDOWN, "shutdown", "the end of a session", ""),
	call(unix.SYS_GETSOCKOPT, "getsockopt", "the check that a session's socket is SOCK_SEQPACKET", "SOL_SOCKET, SO_TYPE",
		seccomp.Allow(seccomp.Eq(1, unix.SOL_SOCKET), seccomp.Eq(2, unix.SO_TYPE))),
	call(unix.SYS_CLOSE, "close", "descriptors it is done with", ""),
	call(unix.SYS_DUP, "dup", "a node's descriptor, kept apart from the one handed over", ""),
	call(unix.SYS_FCNTL, "fcntl", "descriptor flags", "F_GETFD, F_SETFD, F_GETFL, F_SETFL",
		oneOf(1, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL, unix.F_SETFL)...),
	call(unix.SYS_LSEEK, "lseek", "a directory read from its start again", ""),

	call(unix.SYS_OPENAT2, "openat2", "each walk of one name, beneath a directory it holds, following no link", ""),
	call(unix.SYS_OPENAT, "openat", "a bind-mounted single file, by its path in the gofer's own root", ""),
	call(unix.SYS_FSTAT, "fstat", "attributes of a node", ""),
	call(unix.SYS_NEWFSTATAT, "newfstatat", "attributes of a node (AT_EMPTY_PATH)", ""),
	call(unix.SYS_GETDENTS64, "getdents64", "directory listings", ""),
	call(unix.SYS_READLINKAT, "readlinkat", "a symlink's target, for the sentry to resolve", ""),
	call(unix.SYS_FSTATFS, "fstatfs", "statfs of a tree", ""),
	call(unix.SYS_MKDIRAT, "mkdirat", "mkdir", ""),
	call(unix.SYS_MKNODAT, "mknodat", "mkfifo and socket nodes", "no device nodes",
		seccomp.Allow(seccomp.MaskedEq(2, unix.S_IFMT, unix.S_IFIFO)), seccomp.Allow(seccomp.MaskedEq(2, unix.S_IFMT, unix.S_IFSOCK))),
	call(unix.SYS_SYMLINKAT, "symlinkat", "symlink", ""),
	call(unix.SYS_LINKAT, "linkat", "link", ""),
	call(unix.SYS_UNLINKAT, "unlinkat", "unlink and rmdir", ""),
	call(unix.SYS_RENAMEAT2, "renameat2", "rename", ""),
	call(unix.SYS_FCHOWNAT, "fchownat", "the owner the sentry names", ""),
	call(unix.SYS_FCHMODAT, "fchmodat", "the mode the sentry names", ""),
	call(unix.SYS_FCHMODAT2, "fchmodat2", "the mode the sentry names, on a node's descriptor (AT_EMPTY_PATH)", ""),
	call(unix.SYS_UTIMENSAT, "utimensat", "file times", ""),
	call(unix.SYS_FTRUNCATE, "ftruncate", "truncate and O_TRUNC", ""),
	call(unix.SYS_FGETXATTR, "fgetxattr", "extended attributes", ""),
	call(unix.SYS_FSETXATTR, "fsetxattr", "extended attributes", ""),
	call(unix.SYS_FLISTXATTR, "flistxattr", "extended attributes", ""),
	call(unix.SYS_FREMOVEXATTR, "fremovexattr", "extended attributes", ""),
})
