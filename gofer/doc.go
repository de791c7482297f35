// Package gofer is how a sandbox reaches host files: the `moat gofer` process
// runs Serve on one end of a SOCK_SEQPACKET socketpair, and the sentry holds
// the other end as a Client.
//
// The sentry resolves paths itself (symlinks, "..", mounts) in its own VFS
// and asks the gofer for one path component at a time, relative to a node the
// gofer already holds open with O_PATH. Files the guest may read or write
// arrive in the sentry as host fds donated over SCM_RIGHTS; the sentry itself
// can open nothing.
//
// The gofer is therefore the file-system security boundary, and it must
// never:
//   - reach a host file outside the tree it serves: every name is one
//     component, never empty, ".", "..", or containing '/' or NUL, and is
//     resolved with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//     RESOLVE_NO_MAGICLINKS from a directory the gofer already holds;
//   - follow a symlink, magic or not: a link comes back as a node of its own;
//   - open by a /proc/self/fd path, or a path from the root;
//   - open a host device, FIFO or socket for I/O (the sentry provides those
//     itself; a device node in an image must not reach host hardware);
//   - panic, or run out of fds, on whatever the other end sends.
//
// Mounts inside the served tree are crossed: they are the sandbox's own
// mounts, put there because its OCI config named them.
package gofer
