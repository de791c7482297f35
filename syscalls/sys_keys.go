package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// keyctl(2) operations (<linux/keyctl.h>).
const (
	keyctlGetKeyringID       = 0
	keyctlJoinSessionKeyring = 1
	keyctlUpdate             = 2
	keyctlRevoke             = 3
	keyctlDescribe           = 6
	keyctlClear              = 7
	keyctlLink               = 8
	keyctlUnlink             = 9
	keyctlSearch             = 10
	keyctlRead               = 11

	keyTypeMax    = 32   // a type name's buffer, NUL included
	keyDescMax    = 4096 // KEY_MAX_DESC_SIZE
	keyPayloadMax = 1024*1024 - 1
)

// copyInKeyType reads a key type's name: EINVAL if empty or too long.
func copyInKeyType(t *kernel.Task, addr uintptr) (string, error) {
	s, err := t.CopyInString(addr, keyTypeMax)
	if err == unix.ENAMETOOLONG || (err == nil && s == "") {
		return "", unix.EINVAL
	}
	return s, err
}

// copyInKeyDesc reads a description (EINVAL if too long; "" for NULL).
func copyInKeyDesc(t *kernel.Task, addr uintptr) (string, error) {
	if addr == 0 {
		return "", nil
	}
	s, err := t.CopyInString(addr, keyDescMax)
	if err == unix.ENAMETOOLONG {
		return "", unix.EINVAL
	}
	return s, err
}

// copyInKeyName reads a key's type and description, in that order (the
// type's error first, as Linux reads them).
func copyInKeyName(t *kernel.Task, typeAddr, descAddr uintptr) (typ, desc string, err error) {
	if typ, err = copyInKeyType(t, typeAddr); err != nil {
		return "", "", err
	}
	desc, err = copyInKeyDesc(t, descAddr)
	return typ, desc, err
}

// copyInPayload reads a payload of n bytes (nil for none).
func copyInPayload(t *kernel.Task, addr uintptr, n uint64) ([]byte, error) {
	if n > keyPayloadMax {
		return nil, unix.EINVAL
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if _, err := t.CopyIn(addr, b); err != nil {
		return nil, err
	}
	return b, nil
}

// AddKey implements Linux syscall add_key(2).
func AddKey(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[3] > keyPayloadMax {
		return 0, unix.EINVAL
	}
	typ, desc, err := copyInKeyName(t, a.Ptr(0), a.Ptr(1))
	if err != nil {
		return 0, err
	}
	payload, err := copyInPayload(t, a.Ptr(2), a[3])
	if err != nil {
		return 0, err
	}
	serial, err := t.AddKey(typ, desc, payload, a.Int(4))
	return uintptr(serial), err
}

// RequestKey implements Linux syscall request_key(2).
func RequestKey(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	typ, desc, err := copyInKeyName(t, a.Ptr(0), a.Ptr(1))
	if err != nil {
		return 0, err
	}
	if a[2] != 0 {
		if _, err := t.CopyInString(a.Ptr(2), keyPayloadMax); err != nil {
			return 0, err
		}
	}
	serial, err := t.RequestKey(typ, desc, a.Int(3))
	return uintptr(serial), err
}

// Keyctl implements Linux syscall keyctl(2): the operations on keys and
// keyrings the package's note lists; the others answer EOPNOTSUPP, as
// Linux does for one it has not.
func Keyctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id := a.Int(1)
	switch a.Int(0) {
	case keyctlGetKeyringID:
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			k, err := o.Lookup(id, a[2] != 0, true)
			if err != nil {
				return 0, err
			}
			return uintptr(k.Serial), nil
		})
	case keyctlJoinSessionKeyring:
		name, err := copyInKeyDesc(t, a.Ptr(1))
		if err != nil {
			return 0, err
		}
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) { return uintptr(o.JoinSession(name)), nil })
	case keyctlUpdate:
		payload, err := copyInPayload(t, a.Ptr(2), a[3])
		if err != nil {
			return 0, err
		}
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			k, err := o.Lookup(id, true, false)
			if err != nil {
				return 0, err
			}
			return 0, k.Update(payload)
		})
	case keyctlRevoke:
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			k, err := o.Lookup(id, false, false)
			if err != nil {
				return 0, err
			}
			k.Revoke()
			return 0, nil
		})
	case keyctlDescribe, keyctlRead:
		var data []byte
		_, err := t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			k, err := o.Lookup(id, false, false)
			if err != nil {
				return 0, err
			}
			if a.Int(0) == keyctlDescribe {
				data = append([]byte(k.Describe()), 0)
				return 0, nil
			}
			data, err = k.Read()
			return 0, err
		})
		if err != nil {
			return 0, err
		}
		// As Linux: the whole length is the answer, and the data is
		// copied only into a buffer that holds all of it.
		if buf := a.Ptr(2); buf != 0 && len(data) > 0 && a[3] >= uint64(len(data)) {
			if _, err := t.CopyOut(buf, data); err != nil {
				return 0, err
			}
		}
		return uintptr(len(data)), nil
	case keyctlClear:
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			r, err := o.Keyring(id)
			if err != nil {
				return 0, err
			}
			r.Clear()
			return 0, nil
		})
	case keyctlLink, keyctlUnlink:
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			k, err := o.Lookup(id, true, a.Int(0) == keyctlUnlink)
			if err != nil {
				return 0, err
			}
			r, err := o.Keyring(a.Int(2))
			if err != nil {
				return 0, err
			}
			if a.Int(0) == keyctlUnlink {
				return 0, r.Unlink(k)
			}
			r.Link(k)
			return 0, nil
		})
	case keyctlSearch:
		typ, desc, err := copyInKeyName(t, a.Ptr(2), a.Ptr(3))
		if err != nil {
			return 0, err
		}
		return t.Keyctl(func(o *kernel.KeyOps) (uintptr, error) {
			r, err := o.Keyring(id)
			if err != nil {
				return 0, err
			}
			k, err := r.Search(typ, desc)
			if err != nil {
				return 0, err
			}
			if dest := a.Int(4); dest != 0 {
				d, err := o.Keyring(dest)
				if err != nil {
					return 0, err
				}
				d.Link(k)
			}
			return uintptr(k.Serial), nil
		})
	}
	return 0, unix.EOPNOTSUPP
}
