package procfs

import (
	"fmt"

	"github.com/moat-sandbox/moat/sentry/fs/mqueue"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
)

// sysvipcDir is /proc/sysvipc: the System V objects of the sandbox's IPC
// namespace, which ipcs lists.
func (f *fs) sysvipcDir() *node {
	ns := f.k.RootIPCNamespace()
	file := func(name string, table func() []byte) child {
		n := f.file("sysvipc/"+name, func() ([]byte, error) { return table(), nil })
		return child{name, n}
	}
	seen := func(pid int32) int32 { return f.k.IDIn(f.ns, pid) }
	cs := []child{file("shm", func() []byte { return ns.ShmTable(seen) }), file("sem", ns.SemTable),
		file("msg", func() []byte { return ns.MsgTable(seen) })}
	return f.dir("sysvipc", false, func() []child { return cs })
}

// ipcSysctls are /proc/sys/kernel's System V limits, the namespace's:
// shmmax, shmall, shmmni, sem (semmsl semmns semopm semmni, tab
// separated), msgmax, msgmnb, msgmni, and shm_rmid_forced and the
// *_next_id files at Linux's defaults.
func (f *fs) ipcSysctls() []child {
	ns := f.k.RootIPCNamespace()
	value := func(name string, v func(l ipc.Limits) string) child {
		return child{name, f.file("sys/kernel/"+name, func() ([]byte, error) { return []byte(v(ns.Limits()) + "\n"), nil })}
	}
	fixed := func(name, v string) child { return value(name, func(ipc.Limits) string { return v }) }
	return []child{
		value("shmmax", func(l ipc.Limits) string { return fmt.Sprint(l.ShmMax) }),
		value("shmall", func(l ipc.Limits) string { return fmt.Sprint(l.ShmAll) }),
		value("shmmni", func(l ipc.Limits) string { return fmt.Sprint(l.ShmMNI) }),
		value("sem", func(l ipc.Limits) string {
			return fmt.Sprintf("%d\t%d\t%d\t%d", l.SemMSL, l.SemMNS, l.SemOPM, l.SemMNI)
		}),
		value("msgmax", func(l ipc.Limits) string { return fmt.Sprint(l.MsgMax) }),
		value("msgmnb", func(l ipc.Limits) string { return fmt.Sprint(l.MsgMNB) }),
		value("msgmni", func(l ipc.Limits) string { return fmt.Sprint(l.MsgMNI) }),
		fixed("shm_rmid_forced", "0"),
		fixed("shm_next_id", "-1"), fixed("sem_next_id", "-1"), fixed("msg_next_id", "-1"),
	}
}

// mqueueSysctls is /proc/sys/fs/mqueue: the POSIX message queue limits of
// the sandbox's IPC namespace.
func (f *fs) mqueueSysctls(path string) child {
	ns := f.k.RootIPCNamespace().MQueue()
	value := func(name string, v func(l mqueue.Limits) int64) child {
		return child{name, f.file("sys/"+path+"/"+name, func() ([]byte, error) { return []byte(fmt.Sprint(v(ns.Limits())) + "\n"), nil })}
	}
	cs := []child{
		value("msg_max", func(l mqueue.Limits) int64 { return l.MsgMax }),
		value("msgsize_max", func(l mqueue.Limits) int64 { return l.MsgSizeMax }),
		value("queues_max", func(l mqueue.Limits) int64 { return l.QueuesMax }),
		value("msg_default", func(l mqueue.Limits) int64 { return l.MsgDefault }),
		value("msgsize_default", func(l mqueue.Limits) int64 { return l.MsgSizeDefault }),
	}
	return child{"mqueue", f.dir("sys/"+path, false, func() []child { return cs })}
}
