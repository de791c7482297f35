package confine

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// SandboxNamespaces are the namespaces the sentry and the gofer start in:
// nothing of the host's processes, mounts, network, IPC objects, host name
// or cgroup tree is visible from them. The pid namespace makes the sentry
// its init, so that its stubs die with it.
const SandboxNamespaces = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// Nobody is the host user and group a sandbox started by root runs as
// once confined: a process that got out would own nothing of the host.
var Nobody = IDMap{Host: 65534, HostGroup: 65534}

// IDMap is a host user and group.
type IDMap struct{ Host, HostGroup int }

// SentryProcAttr adds to attr what starts the sentry confined: the sandbox
// namespaces and a user namespace. Started by root (privileged), the
// namespace maps every id to itself and the sentry starts as root in it,
// with no supplementary groups: it keeps the capabilities it needs to
// change its root only in its own namespaces, becomes m (DropPrivileges)
// before it reads anything of the guest, and sees the owners of the host
// files the gofer hands it as they are. Started by another user, only m
// (the caller) exists in the namespace, as itself, so that the files the
// gofer hands it show the caller's ids (the sentry stats them itself); not
// being root in it, the sentry gets the capabilities it confines itself
// with as ambient ones (rootlessSentryCapabilities), which it drops.
func SentryProcAttr(attr *syscall.SysProcAttr, m IDMap, privileged bool) {
	attr.Cloneflags |= SandboxNamespaces
	if privileged {
		all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		attr.UidMappings, attr.GidMappings = all, all
		attr.GidMappingsEnableSetgroups = true
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
		return
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: m.Host, HostID: m.Host, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: m.HostGroup, HostID: m.HostGroup, Size: 1}}
	// An unprivileged process may map its own group only after denying
	// setgroups(2) in the namespace.
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = rootlessSentryCapabilities
}

// rootlessSentryCapabilities are a rootless sentry's, within its own user
// namespace, until DropPrivileges: making its empty root (CAP_SYS_ADMIN)
// and entering it, which no mode lets anyone search (CAP_DAC_READ_SEARCH),
// dropping its bounding set and locking its securebits (CAP_SETPCAP).
var rootlessSentryCapabilities = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_READ_SEARCH, unix.CAP_SETPCAP}

// GoferProcAttr adds to attr what starts the gofer confined: the sandbox
// namespaces and, started by root, a user namespace that maps every id to
// itself, so that the gofer's files keep their owners while its
// capabilities count for nothing outside its namespaces but the files of
// its trees. Started by another user (m, the caller), the namespace maps
// that user and group alone, to themselves, so that the files the gofer
// makes are the caller's; not being root in it, the gofer gets the
// capabilities it confines itself with and serves files with as ambient
// ones (rootlessGoferCapabilities), which an exec keeps.
func GoferProcAttr(attr *syscall.SysProcAttr, m IDMap, privileged bool) {
	attr.Cloneflags |= SandboxNamespaces
	if privileged {
		all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		attr.UidMappings, attr.GidMappings = all, all
		attr.GidMappingsEnableSetgroups = true
		return
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: m.Host, HostID: m.Host, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: m.HostGroup, HostID: m.HostGroup, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = rootlessGoferCapabilities
}

// rootlessGoferCapabilities are a rootless gofer's, within its own user
// namespace: making its root (CAP_SYS_ADMIN), dropping its bounding set
// and locking its securebits (CAP_SETPCAP), and GoferCapabilities with
// goferLinkCapability, which DropPrivileges then narrows. Over the host's
// files they count only where the caller's own ids do.
var rootlessGoferCapabilities = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE,
	unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_DAC_READ_SEARCH}
