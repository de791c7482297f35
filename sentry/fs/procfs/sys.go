package procfs

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/inotify"
	"github.com/moat-sandbox/moat/sentry/fs/pipe"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// sysDir is /proc/sys: the sysctls programs read to learn the kernel's
// limits and identity. Linux lets root write most of them; the sandbox's
// kernel has none a guest may change, so a write is refused at open with
// EACCES, as Linux refuses a read-only sysctl even to root, except for
// hostname and domainname, which are the reader's (and writer's) UTS
// namespace's, written as sethostname(2) and setdomainname(2) would
// (EPERM without CAP_SYS_ADMIN). The entries:
//
//	kernel/{hostname,domainname,osrelease,ostype,version,pid_max,threads-max,ngroups_max,
//	        cap_last_cap,overflowuid,overflowgid} and the System V limits
//	        (sysvipc.go)
//	kernel/random/{boot_id,uuid,entropy_avail,poolsize}
//	vm/{overcommit_memory,overcommit_ratio,max_map_count,mmap_min_addr}
//	fs/{file-max,nr_open,pipe-max-size}
//	fs/mqueue/{msg_max,msgsize_max,queues_max,msg_default,msgsize_default}
//	        (sysvipc.go)
//	fs/inotify/{max_user_watches,max_user_instances,max_queued_events}
//	net/{core,ipv4,ipv6,unix}/... (net.go)
//	user/max_user_namespaces
func (f *fs) sysDir() *node {
	value := func(path, v string) child {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return child{name, f.file("sys/"+path, func() ([]byte, error) { return []byte(v + "\n"), nil })}
	}
	number := func(path string, v uint64) child { return value(path, fmt.Sprint(v)) }
	dir := func(path string, cs ...child) child {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return child{name, f.dir("sys/"+path, false, func() []child { return cs })}
	}
	hostname := f.utsName("sys/kernel/hostname", true)
	domainname := f.utsName("sys/kernel/domainname", false)
	// boot_id names this boot of the sandbox; uuid is new at each read.
	bootID := randomUUID()
	kernelDir := dir("kernel", append(f.ipcSysctls(), // sysvipc.go
		child{"hostname", hostname}, child{"domainname", domainname},
		value("kernel/osrelease", kernel.Release), value("kernel/ostype", kernel.OSType),
		value("kernel/version", kernel.Version),
		value("kernel/core_pattern", kernel.CorePattern), number("kernel/core_uses_pid", 0),
		// pid_max is one past the largest pid the kernel hands out.
		number("kernel/pid_max", 1<<22),
		number("kernel/threads-max", 1<<20),
		// setgroups(2)'s limit, NGROUPS_MAX.
		number("kernel/ngroups_max", 65536),
		number("kernel/cap_last_cap", unix.CAP_LAST_CAP),
		number("kernel/overflowuid", 65534), number("kernel/overflowgid", 65534),
		// The YAMA scope the sandbox's ptrace checks enforce (fixed: a
		// write is refused, as for the other read-only sysctls).
		dir("kernel/yama", number("kernel/yama/ptrace_scope", kernel.PtraceScope)),
		dir("kernel/random", value("kernel/random/boot_id", bootID),
			child{"uuid", f.file("sys/kernel/random/uuid", func() ([]byte, error) { return []byte(randomUUID() + "\n"), nil })},
			number("kernel/random/entropy_avail", 256), number("kernel/random/poolsize", 256)),
	)...)
	return f.dir("sys", false, func() []child {
		return []child{
			kernelDir,
			// Heuristic overcommit, Linux's default, as the sentry's mm
			// does not refuse mappings past memory.
			dir("vm", number("vm/overcommit_memory", 0), number("vm/overcommit_ratio", 50),
				number("vm/max_map_count", 65530), number("vm/mmap_min_addr", mm.MinAddr)),
			dir("fs", number("fs/nr_open", 1<<20), number("fs/file-max", 9223372036854775807),
				number("fs/pipe-max-size", pipe.MaxSize), f.mqueueSysctls("fs/mqueue"),
				dir("fs/inotify", number("fs/inotify/max_user_watches", 8192),
					number("fs/inotify/max_user_instances", 128), number("fs/inotify/max_queued_events", inotify.MaxQueuedEvents))),
			f.sysNetDir(), // net.go
			dir("user", child{"max_user_namespaces", f.maxUserNamespaces()}),
		}
	})
}

func randomUUID() string {
	var b [16]byte
	unix.Getrandom(b[:], 0)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// utsName is kernel/hostname (host) or kernel/domainname: the opener's
// UTS namespace's name, which a write with CAP_SYS_ADMIN sets (up to 64
// bytes, a trailing newline dropped).
func (f *fs) utsName(path string, host bool) *node {
	names := func(t *kernel.Task) string {
		h, d := t.UTSNamespace().Names()
		if host {
			return h
		}
		return d
	}
	n := f.file(path, func() ([]byte, error) {
		h, d := f.k.RootUTSNamespace().Names()
		if host {
			return []byte(h + "\n"), nil
		}
		return []byte(d + "\n"), nil
	})
	n.writable(64, func(w *kernel.Task, data []byte) error {
		if !w.CapableIn(w.UTSNamespace().Owner(), unix.CAP_SYS_ADMIN) {
			return unix.EPERM
		}
		name := strings.TrimSuffix(string(data), "\n")
		if host {
			w.UTSNamespace().SetHostname(name)
		} else {
			w.UTSNamespace().SetDomainname(name)
		}
		return nil
	})
	n.openAs = func(c vfs.Context, flags int) (vfs.FileImpl, error) {
		t, ok := c.(*kernel.Task)
		if !ok || flags&unix.O_ACCMODE == unix.O_WRONLY {
			return n.Open(flags)
		}
		if flags&unix.O_ACCMODE != unix.O_RDONLY && n.write == nil {
			return nil, unix.EACCES
		}
		return newSnapshot(n, func() ([]byte, error) { return []byte(names(t) + "\n"), nil })
	}
	return n
}

// maxUserNamespaces is user/max_user_namespaces: how many user namespaces
// may be nested in the sandbox's first at once, which root of the first
// with CAP_SYS_RESOURCE may set (0 refuses every new one: ENOSPC).
func (f *fs) maxUserNamespaces() *node {
	n := f.file("sys/user/max_user_namespaces", func() ([]byte, error) {
		return []byte(fmt.Sprint(kernel.MaxUserNamespaces.Load()) + "\n"), nil
	})
	return n.writable(numberMax, func(w *kernel.Task, data []byte) error {
		if !w.Capable(unix.CAP_SYS_RESOURCE) {
			return unix.EPERM
		}
		v, err := parseNumber(data)
		if err != nil {
			return err
		}
		if v < 0 {
			return unix.EINVAL
		}
		kernel.MaxUserNamespaces.Store(int64(v))
		return nil
	})
}
