package confine

import "golang.org/x/sys/unix"

// GoferCapabilities are all the gofer's file operations may need: giving a
// new file the owner the sentry names (CAP_CHOWN), reading and writing
// files whatever their modes, which the sentry has checked (CAP_DAC_OVERRIDE),
// changing the mode, times and attributes of files it does not own
// (CAP_FOWNER), and keeping set-group-id bits the sentry allowed
// (CAP_FSETID). FIFOs and sockets need no CAP_MKNOD, and device nodes are
// never made.
const GoferCapabilities = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID

// goferLinkCapability is kept whatever the container holds: a hard link is
// made from a node's descriptor (linkat AT_EMPTY_PATH), which Linux allows
// the descriptor's opener with the credentials it opened it with, and
// anyone else with CAP_DAC_READ_SEARCH; each gofer thread has credentials
// of its own once they were dropped, and requests run on any thread. It
// gives nothing outside the gofer's trees: open_by_handle_at needs it in
// the host's first user namespace, and the filter refuses that call.
const goferLinkCapability = 1 << unix.CAP_DAC_READ_SEARCH

// GoferPrivileges is what the gofer of a container keeps: of
// GoferCapabilities, those the container's process may ever hold (its
// bounding set), since the gofer acts for it, and goferLinkCapability;
// and, if that leaves it unable to give a file another owner, the
// process's user and groups, so that the files it makes are the
// process's, as they would be on Linux.
func GoferPrivileges(bounding uint64, user IDs) (keep uint64, ids *IDs) {
	keep = GoferCapabilities&bounding | goferLinkCapability
	if keep&(1<<unix.CAP_CHOWN) == 0 {
		ids = &user
	}
	return keep, ids
}
