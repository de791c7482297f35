package vfs

import "golang.org/x/sys/unix"

// Landlock's scopes (ABI 6): a layer that scopes signals or abstract unix
// sockets keeps its tasks from reaching, that way, a task or socket
// outside the layer's domain (or the domains made on it). The signal and
// socket calls check them.

// LandlockScopes are the scopes moat knows.
const LandlockScopes = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL

// Scopes reports whether client's domain keeps it from reaching server's
// (either may be nil) for scope: some layer of client that sets scope is
// not one of server's layers (Linux's domain_is_scoped).
func (client *LandlockDomain) Scopes(server *LandlockDomain, scope uint64) bool {
	for c := client; c != nil; c = c.parent {
		if c.layers[len(c.layers)-1].Scoped&scope != 0 && !c.Encloses(server) {
			return true
		}
	}
	return false
}
