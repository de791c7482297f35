package ipc

import (
	"fmt"
	"strings"

	"github.com/moat-sandbox/moat/sentry/mm"
)

// The files of /proc/sysvipc, in the columns and widths Linux prints them
// (ipc/shm.c, ipc/sem.c, ipc/msg.c: sysvipc_*_proc_show), which ipcs
// reads. The objects keep the pids of the callers (Caller.PID) as the
// kernel gives them; seen turns one into what the reader's /proc shows.

// ShmTable is /proc/sysvipc/shm.
func (ns *Namespace) ShmTable(seen func(pid int32) int32) []byte {
	var b strings.Builder
	b.WriteString("       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n")
	stats, rss := ns.Shms()
	for i, s := range stats {
		p := s.Perm
		fmt.Fprintf(&b, "%10d %10d  %4o %21d %5d %5d  %5d %5d %5d %5d %5d %10d %10d %10d %21d %21d\n",
			p.Key, p.ID, p.Mode, s.Size, seen(s.CPID), seen(s.LPID), s.Nattch, p.UID, p.GID, p.CUID, p.CGID,
			s.Atime, s.Dtime, s.Ctime, rss[i]*mm.PageSize, 0)
	}
	return []byte(b.String())
}

// SemTable is /proc/sysvipc/sem.
func (ns *Namespace) SemTable() []byte {
	var b strings.Builder
	b.WriteString("       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n")
	for _, s := range ns.Sems() {
		p := s.Perm
		fmt.Fprintf(&b, "%10d %10d  %4o %10d %5d %5d %5d %5d %10d %10d\n",
			p.Key, p.ID, p.Mode, s.Nsems, p.UID, p.GID, p.CUID, p.CGID, s.Otime, s.Ctime)
	}
	return []byte(b.String())
}

// MsgTable is /proc/sysvipc/msg.
func (ns *Namespace) MsgTable(seen func(pid int32) int32) []byte {
	var b strings.Builder
	b.WriteString("       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n")
	for _, q := range ns.Msgs() {
		p := q.Perm
		fmt.Fprintf(&b, "%10d %10d  %4o  %10d %10d %5d %5d %5d %5d %5d %5d %10d %10d %10d\n",
			p.Key, p.ID, p.Mode, q.Cbytes, q.Qnum, seen(q.LSPID), seen(q.LRPID), p.UID, p.GID, p.CUID, p.CGID,
			q.Stime, q.Rtime, q.Ctime)
	}
	return []byte(b.String())
}
