package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// TTY is a terminal as job control sees it: the session it is the
// controlling terminal of and that session's foreground process group. A
// terminal driver (a devpts replica, the container's host console) holds
// one; the kernel holds the link from each process to its controlling
// terminal (Linux's signal->tty), which fork copies and setsid drops.
//
// The session and the foreground group are guarded by Kernel.treeMu: every
// rule about them (same session, group exists, leader or not) is a
// question about the process tree.
type TTY struct {
	dev uint64                 // the device number, for /proc/PID/stat's tty_nr
	k   atomic.Pointer[Kernel] // set when the terminal first controls a session
	// driver reopens the terminal for /dev/tty; set before the terminal
	// is shared.
	driver TTYDriver

	sid int32 // the session it controls; 0 for none
	fg  int32 // that session's foreground process group; 0 for none
}

// NewTTY returns a terminal with device number rdev that controls nothing.
func NewTTY(rdev uint64) *TTY { return &TTY{dev: rdev} }

// Dev is the terminal's device number.
func (tty *TTY) Dev() uint64 { return tty.dev }

// EncodedDev is the device number as Linux encodes it in
// /proc/PID/stat's tty_nr (new_encode_dev).
func (tty *TTY) EncodedDev() uint32 {
	major, minor := unix.Major(tty.dev), unix.Minor(tty.dev)
	return minor&0xff | major<<8 | (minor&^0xff)<<12
}

// isLeader reports whether tg leads its session (treeMu held).
func (tg *ThreadGroup) isLeader() bool { return tg.pid == tg.sid }

// ControllingTTY returns the process's controlling terminal, or nil.
func (t *Task) ControllingTTY() *TTY {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	return t.tg.tty
}

// TTYState returns the process's controlling terminal and its foreground
// process group (for /proc/PID/stat's tty_nr and tpgid: 0 and -1 without
// one).
func (tg *ThreadGroup) TTYState() (tty *TTY, fg int32) {
	tg.k.treeMu.Lock()
	defer tg.k.treeMu.Unlock()
	if tg.tty == nil {
		return nil, -1
	}
	if tg.tty.fg == 0 {
		return tg.tty, -1
	}
	return tg.tty, tg.tty.fg
}

// setControllingLocked makes tty the controlling terminal of t's process
// and of its session, with t's group in the foreground (Linux's
// __proc_set_tty). Only the caller's process gets the link: others of the
// session get it by fork.
func (tty *TTY) setControllingLocked(t *Task) {
	tty.k.Store(t.k)
	tty.sid, tty.fg = t.tg.sid, t.tg.pgid
	t.tg.tty = tty
}

// Opened applies Linux's rule for an open of a terminal without O_NOCTTY
// (tty_open_proc_set_tty): a session leader with no controlling terminal
// that opens, for reading, a terminal no session controls, acquires it.
// Drivers call it for the terminals that qualify (a pty replica; not a pty
// master, /dev/tty or /dev/console).
func (tty *TTY) Opened(t *Task, flags int) {
	if flags&unix.O_NOCTTY != 0 || flags&unix.O_ACCMODE == unix.O_WRONLY {
		return
	}
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	if t.tg.isLeader() && t.tg.tty == nil && tty.sid == 0 {
		tty.setControllingLocked(t)
	}
}

// SetControlling implements TIOCSCTTY: the caller, a session leader with
// no controlling terminal, makes tty its session's. A terminal that
// controls another session is taken from it only with steal and
// CAP_SYS_ADMIN; a file opened without read access needs CAP_SYS_ADMIN.
// A leader whose session the terminal already controls succeeds.
func (tty *TTY) SetControlling(t *Task, steal, readable bool) error {
	admin := t.Capable(unix.CAP_SYS_ADMIN)
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	if tg.isLeader() && tty.sid == tg.sid {
		return nil
	}
	if !tg.isLeader() || tg.tty != nil {
		return unix.EPERM
	}
	if tty.sid != 0 {
		if !steal || !admin {
			return unix.EPERM
		}
		k.clearSessionTTYLocked(tty.sid, tty)
	}
	if !readable && !admin {
		return unix.EPERM
	}
	tty.setControllingLocked(t)
	return nil
}

// Disassociate implements TIOCNOTTY: the caller's process gives up tty,
// which must be its controlling terminal. A session leader gives it up for
// the whole session, and its foreground group gets SIGHUP and SIGCONT
// (Linux's disassociate_ctty(0)).
func (tty *TTY) Disassociate(t *Task) error {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	if tg.tty != tty {
		return unix.ENOTTY
	}
	if !tg.isLeader() {
		tg.tty = nil
		return nil
	}
	if fg := tty.fg; fg != 0 {
		k.signalGroupLocked(fg, int(unix.SIGHUP))
		k.signalGroupLocked(fg, int(unix.SIGCONT))
	}
	k.clearSessionTTYLocked(tty.sid, tty)
	return nil
}

// clearSessionTTYLocked takes tty away from session sid: from the
// terminal and from every process of the session that has it.
func (k *Kernel) clearSessionTTYLocked(sid int32, tty *TTY) {
	for _, tg := range k.tgs {
		if tg.sid == sid && tg.tty == tty {
			tg.tty = nil
		}
	}
	if tty.sid == sid {
		tty.sid, tty.fg = 0, 0
	}
}

// leaveTTYLocked is a session leader's exit (treeMu held): its session
// loses its controlling terminal and the foreground group gets SIGHUP
// (Linux's disassociate_ctty(1), as for a pty).
func (tg *ThreadGroup) leaveTTYLocked() {
	tty := tg.tty
	if tty == nil || !tg.isLeader() {
		return
	}
	if tty.sid == tg.sid && tty.fg != 0 {
		tg.k.signalGroupLocked(tty.fg, int(unix.SIGHUP))
	}
	tg.k.clearSessionTTYLocked(tg.sid, tty)
}

// checkCaller is the rule of TIOCGPGRP and TIOCGSID on a terminal's own
// side: the caller must have it as its controlling terminal. Through a pty
// master (viaMaster) anyone may ask.
func (tty *TTY) checkCallerLocked(t *Task, viaMaster bool) error {
	if !viaMaster && t.tg.tty != tty {
		return unix.ENOTTY
	}
	return nil
}

// ForegroundGroup implements TIOCGPGRP: the foreground process group as
// t sees it, 0 for none (or one outside t's pid namespace).
func (tty *TTY) ForegroundGroup(t *Task, viaMaster bool) (int32, error) {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	if err := tty.checkCallerLocked(t, viaMaster); err != nil {
		return 0, err
	}
	return t.tg.pidns.idOf(tty.fg), nil
}

// SessionID implements TIOCGSID: the session tty controls (ENOTTY for
// none).
func (tty *TTY) SessionID(t *Task, viaMaster bool) (int32, error) {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	if err := tty.checkCallerLocked(t, viaMaster); err != nil {
		return 0, err
	}
	if tty.sid == 0 {
		return 0, unix.ENOTTY
	}
	return t.tg.pidns.idOf(tty.sid), nil
}

// SetForegroundGroup implements TIOCSPGRP: a process of the session tty
// controls moves the foreground to pgid, a group of its own session (or a
// process of it: Linux looks a number up as a group, then as a process).
// A background caller is stopped first (SIGTTOU) as for any change of the
// terminal.
func (tty *TTY) SetForegroundGroup(t *Task, pgid int32) error {
	switch err := tty.CheckChange(t, int(unix.SIGTTOU)); err {
	case nil:
	case unix.EIO:
		return unix.ENOTTY
	default:
		return err
	}
	if pgid < 0 {
		return unix.EINVAL
	}
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	if tg.tty != tty || tty.sid != tg.sid {
		return unix.ENOTTY
	}
	if pgid = tg.pidns.rootOf(pgid); pgid == 0 {
		return unix.ESRCH // no group the caller sees
	}
	sid, found := int32(0), false
	for _, o := range k.tgs {
		if o.pgid == pgid && !o.zombie {
			sid, found = o.sid, true
			break
		}
	}
	if !found {
		if o := k.tgs[pgid]; o != nil {
			sid, found = o.sid, true
		} else if k.tasks[pgid] == nil {
			return unix.ESRCH
		}
	}
	if !found || sid != tg.sid {
		return unix.EPERM
	}
	tty.fg = pgid
	return nil
}

// CheckChange is job control's check before a process reads its
// controlling terminal (sig SIGTTIN), writes it with TOSTOP set or changes
// its settings (SIGTTOU), as Linux's __tty_check_change: a process of a
// background group is sent sig, and the call restarts once the group is
// continued. A process that ignores or blocks sig goes on (for SIGTTIN it
// gets EIO), and so does nothing of an orphaned group, which would never be
// continued: EIO. Processes for which tty is not the controlling terminal
// are not checked.
func (tty *TTY) CheckChange(t *Task, sig int) error {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	if tg.tty != tty || tty.fg == 0 || tg.pgid == tty.fg {
		return nil
	}
	tg.mu.Lock()
	ignored := t.sigMask&sigBit(sig) != 0 || tg.Action(sig).Handler == linuxabi.SIG_IGN
	tg.mu.Unlock()
	switch {
	case ignored:
		if sig == int(unix.SIGTTIN) {
			return unix.EIO
		}
		return nil
	case k.orphanedGroupLocked(tg.pgid):
		return unix.EIO
	}
	k.signalGroupLocked(tg.pgid, sig)
	return ERESTARTSYS
}

// orphanedGroupLocked reports whether process group pgid is orphaned: no
// member has a parent in another group of the same session (POSIX; Linux's
// will_become_orphaned_pgrp). The sandbox's init is a parent like any
// other, as a container's init is: it is not the host's.
func (k *Kernel) orphanedGroupLocked(pgid int32) bool {
	for _, tg := range k.tgs {
		if tg.pgid != pgid || tg.zombie {
			continue
		}
		if p := tg.parent; p != nil && p.pgid != pgid && p.sid == tg.sid {
			return false
		}
	}
	return true
}

// signalGroupLocked sends sig from the kernel to every living process of
// group pgid (Linux's kill_pgrp with priv set), treeMu held.
func (k *Kernel) signalGroupLocked(pgid int32, sig int) {
	info := SigInfo{Signo: int32(sig), Code: linuxabi.SI_KERNEL}
	for _, tg := range k.tgs {
		if tg.pgid == pgid && !tg.zombie {
			tg.SendSignal(info)
		}
	}
}

// SignalForeground sends sig to tty's foreground process group, as a line
// discipline does for its signal characters and a resize for SIGWINCH. A
// terminal that controls no session signals no one.
func (tty *TTY) SignalForeground(sig int) {
	k := tty.k.Load()
	if k == nil {
		return
	}
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	if tty.fg != 0 {
		k.signalGroupLocked(tty.fg, sig)
	}
}

// Hangup is the terminal's other end going away (a pty master's last
// close, Linux's __tty_hangup): every process of the session it controls
// loses it, and the session's leader gets SIGHUP and SIGCONT.
func (tty *TTY) Hangup() {
	k := tty.k.Load()
	if k == nil {
		return
	}
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	sid := tty.sid
	if sid == 0 {
		return
	}
	for _, tg := range k.tgs {
		if tg.sid != sid {
			continue
		}
		if tg.tty == tty {
			tg.tty = nil
		}
		if tg.isLeader() && !tg.zombie {
			info := SigInfo{Signo: int32(unix.SIGHUP), Code: linuxabi.SI_KERNEL}
			tg.SendSignal(info)
			info.Signo = int32(unix.SIGCONT)
			tg.SendSignal(info)
		}
	}
	tty.sid, tty.fg = 0, 0
}

// HasCap reports whether the task holds cap in its effective set.
func (t *Task) HasCap(cap uint) bool {
	t.creds.Lock()
	defer t.creds.Unlock()
	return t.creds.hasCapLocked(cap)
}

// Terminal is an open file of a terminal: ioctl's job-control requests
// (TIOCSCTTY, TIOCSPGRP, ...) act on its TTY. viaMaster is set for a pty
// master, whose requests act on its replica with the rules Linux has for
// the master side; err is set when the terminal can answer nothing (a
// hung-up replica: EIO).
type Terminal interface {
	Terminal() (tty *TTY, viaMaster bool, err error)
}

// TTYDriver opens more files of a terminal: /dev/tty opens its caller's
// controlling terminal through it, with the attributes of the /dev/tty
// node (stat).
type TTYDriver interface {
	Reopen(flags int, stat func() vfs.Stat) (vfs.FileImpl, error)
}

// SetDriver sets what opens tty again for /dev/tty.
func (tty *TTY) SetDriver(d TTYDriver) { tty.driver = d }

// OpenControlling opens the caller's controlling terminal, for /dev/tty:
// ENXIO when it has none, as for a daemon.
func (t *Task) OpenControlling(flags int, stat func() vfs.Stat) (vfs.FileImpl, error) {
	tty := t.ControllingTTY()
	if tty == nil || tty.driver == nil {
		return nil, unix.ENXIO
	}
	return tty.driver.Reopen(flags, stat)
}

// TTYOpener is an inode whose open depends on the task opening it: /dev/tty
// (the caller's controlling terminal), a pty replica (which a session
// leader may acquire), /dev/ptmx (whose new replica the caller owns).
type TTYOpener interface {
	OpenTask(t *Task, flags int) (vfs.FileImpl, error)
}
