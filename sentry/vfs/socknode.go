package vfs

import "golang.org/x/sys/unix"

// MakeSocket makes the node bind(2) gives an AF_UNIX socket's path name,
// as mknod(S_IFSOCK) would (mode's permission bits have the umask applied)
// and returns it. The node is an ordinary entry of its file system (stat
// shows it, unlink removes it); the socket bound to it is found by the
// node's inode, never through the host.
func MakeSocket(c *Creds, t Target, mode uint32) (Path, error) {
	mode = unix.S_IFSOCK | mode&0o7777
	return create(c, t, mode, func(w DirWriter, mode, uid, gid uint32) (Inode, error) {
		return w.Mknod(t.Name, mode, 0, uid, gid)
	})
}
