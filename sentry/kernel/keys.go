package kernel

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Keys and keyrings (add_key, request_key, keyctl), the sandbox's own:
// no key of the host's is reached. A task has a thread keyring, its
// process a process keyring, each made on first use; a session keyring,
// which clone passes on; and every uid a user keyring and a user session
// keyring. The types are "user", "logon" (whose payload is never read
// back) and "keyring". Permissions are a possessor's: a key a task can
// reach through its keyrings it may use in every way.

// Special keyring ids (<linux/keyctl.h>).
const (
	KeySpecThreadKeyring      = -1
	KeySpecProcessKeyring     = -2
	KeySpecSessionKeyring     = -3
	KeySpecUserKeyring        = -4
	KeySpecUserSessionKeyring = -5
)

// Key permission bits of the defaults Linux gives.
const (
	keyPosAll        = 0x3f000000
	keyUsrView       = 0x00010000
	keyUsrRead       = 0x00020000
	keyUsrAll        = 0x003f0000
	keyPosView       = 0x01000000
	keyPosRead       = 0x02000000
	keyPosWrite      = 0x04000000
	keyPosSearch     = 0x08000000
	keyPosLink       = 0x10000000
	keyPosSetattr    = 0x20000000
	keyMaxUserData   = 32767
	keyMaxDescLen    = 4095
	keyringType      = "keyring"
	keyMaxSearchDeep = 6
)

// Key is a key or a keyring.
type Key struct {
	Serial  int32
	Type    string
	Desc    string
	payload []byte
	uid     uint32
	gid     uint32
	perm    uint32
	revoked bool
	links   []*Key // a keyring's keys, in the order they were linked
}

// keyTable is the sandbox's keys, by serial.
type keyTable struct {
	mu     sync.Mutex
	serial map[int32]*Key
	user   map[uint32][2]*Key // user and user session keyrings, by uid
}

func (k *Kernel) keysLocked() *keyTable {
	kt := &k.keys
	if kt.serial == nil {
		kt.serial = make(map[int32]*Key)
		kt.user = make(map[uint32][2]*Key)
	}
	return kt
}

// newKeyLocked makes a key with a serial no other has (random and
// positive, as Linux's).
func (kt *keyTable) newKeyLocked(typ, desc string, payload []byte, uid, gid, perm uint32) *Key {
	for {
		s := rand.Int32()
		if s > 3 && kt.serial[s] == nil {
			key := &Key{Serial: s, Type: typ, Desc: desc, payload: payload, uid: uid, gid: gid, perm: perm}
			kt.serial[s] = key
			return key
		}
	}
}

// userKeyringsLocked are uid's user keyring and user session keyring,
// made on first use.
func (t *Task) userKeyringsLocked(kt *keyTable) (user, session *Key) {
	c := t.FSCreds()
	pair, ok := kt.user[c.FSUID]
	if !ok {
		pair[0] = kt.newKeyLocked(keyringType, fmt.Sprintf("_uid.%d", c.FSUID), nil, c.FSUID, c.FSGID, keyPosAll|keyUsrAll)
		pair[1] = kt.newKeyLocked(keyringType, fmt.Sprintf("_uid_ses.%d", c.FSUID), nil, c.FSUID, c.FSGID, keyPosAll|keyUsrAll)
		pair[1].links = append(pair[1].links, pair[0])
		kt.user[c.FSUID] = pair
	}
	return pair[0], pair[1]
}

// lookupKeyLocked resolves id, a serial or a special id, to a key;
// create makes a special keyring that is not there yet. ENOKEY if there
// is no such key, EKEYREVOKED for a revoked one (unless revokedOK).
func (t *Task) lookupKeyLocked(kt *keyTable, id int32, create, revokedOK bool) (*Key, error) {
	c := t.FSCreds()
	var key *Key
	switch id {
	case KeySpecThreadKeyring:
		if t.threadKeyring == nil && create {
			t.threadKeyring = kt.newKeyLocked(keyringType, "_tid", nil, c.FSUID, c.FSGID, keyPosAll|keyUsrView)
		}
		key = t.threadKeyring
	case KeySpecProcessKeyring:
		if t.tg.processKeyring == nil && create {
			t.tg.processKeyring = kt.newKeyLocked(keyringType, "_pid", nil, c.FSUID, c.FSGID, keyPosAll|keyUsrView)
		}
		key = t.tg.processKeyring
	case KeySpecSessionKeyring:
		if t.sessionKeyring == nil {
			// As Linux: without one, the user session keyring becomes
			// the session keyring, or a new one is joined to create.
			if create {
				t.sessionKeyring = kt.newKeyLocked(keyringType, "_ses", nil, c.FSUID, c.FSGID, keyPosAll|keyUsrView|keyUsrRead)
			} else {
				_, t.sessionKeyring = t.userKeyringsLocked(kt)
			}
		}
		key = t.sessionKeyring
	case KeySpecUserKeyring:
		key, _ = t.userKeyringsLocked(kt)
	case KeySpecUserSessionKeyring:
		_, key = t.userKeyringsLocked(kt)
	default:
		if id <= 0 {
			return nil, unix.EINVAL
		}
		key = kt.serial[id]
	}
	if key == nil {
		return nil, unix.ENOKEY
	}
	if key.revoked && !revokedOK {
		return nil, unix.EKEYREVOKED
	}
	return key, nil
}

// keyringLocked is lookupKeyLocked for an id that must name a keyring
// (ENOTDIR otherwise), made if it is a special one not there yet.
func (t *Task) keyringLocked(kt *keyTable, id int32) (*Key, error) {
	key, err := t.lookupKeyLocked(kt, id, true, false)
	if err != nil {
		return nil, err
	}
	if key.Type != keyringType {
		return nil, unix.ENOTDIR
	}
	return key, nil
}

// checkKeyType is add_key's check of a type and description: ENODEV for
// a type the sandbox has not, EPERM for the internal ones (a leading '.'),
// EINVAL for an empty description or a logon key's without a "service:"
// prefix.
func checkKeyType(typ, desc string) error {
	switch {
	case strings.HasPrefix(typ, "."):
		return unix.EPERM
	case typ != "user" && typ != "logon" && typ != keyringType:
		return unix.ENODEV
	case desc == "":
		return unix.EINVAL
	case typ == "logon" && strings.IndexByte(desc, ':') <= 0:
		return unix.EINVAL
	}
	return nil
}

// AddKey implements add_key(2): a key of type with desc and payload in
// the keyring with id ring, or the existing one of that type and
// description there updated (a new keyring replaces one of its name).
func (t *Task) AddKey(typ, desc string, payload []byte, ring int32) (int32, error) {
	if err := checkKeyType(typ, desc); err != nil {
		return 0, err
	}
	if typ == keyringType && payload != nil {
		return 0, unix.EINVAL
	}
	if typ != keyringType && (len(payload) == 0 || len(payload) > keyMaxUserData) {
		return 0, unix.EINVAL
	}
	kt := t.k.keysLocked()
	kt.mu.Lock()
	defer kt.mu.Unlock()
	dest, err := t.keyringLocked(kt, ring)
	if err != nil {
		return 0, err
	}
	for i, old := range dest.links {
		if old.Type == typ && old.Desc == desc {
			if typ != keyringType && !old.revoked {
				old.payload = payload
				return old.Serial, nil
			}
			dest.links = append(dest.links[:i:i], dest.links[i+1:]...)
			break
		}
	}
	c := t.FSCreds()
	perm := uint32(keyPosView | keyPosSearch | keyPosLink | keyPosSetattr | keyUsrView | keyPosWrite)
	if typ != "logon" {
		perm |= keyPosRead | keyUsrRead
	}
	key := kt.newKeyLocked(typ, desc, payload, c.FSUID, c.FSGID, perm)
	dest.links = append(dest.links, key)
	return key.Serial, nil
}

// searchLocked looks for a key of typ and desc in ring and the keyrings
// it holds, depth first, as Linux's keyring_search does.
func searchLocked(ring *Key, typ, desc string, depth int) *Key {
	for _, k := range ring.links {
		if !k.revoked && k.Type == typ && k.Desc == desc {
			return k
		}
	}
	if depth >= keyMaxSearchDeep {
		return nil
	}
	for _, k := range ring.links {
		if k.Type == keyringType && !k.revoked {
			if found := searchLocked(k, typ, desc, depth+1); found != nil {
				return found
			}
		}
	}
	return nil
}

// linkLocked links key into ring, once.
func linkLocked(ring, key *Key) {
	for _, k := range ring.links {
		if k == key {
			return
		}
	}
	ring.links = append(ring.links, key)
}

// RequestKey implements request_key(2): the key of typ and desc in the
// task's thread, process or session keyring (and those they hold),
// linked into dest if not 0. Nothing can make a missing key (there is no
// /sbin/request-key in the sentry): ENOKEY.
func (t *Task) RequestKey(typ, desc string, dest int32) (int32, error) {
	if err := checkKeyType(typ, desc); err != nil {
		return 0, err
	}
	if typ == keyringType {
		return 0, unix.EPERM
	}
	kt := t.k.keysLocked()
	kt.mu.Lock()
	defer kt.mu.Unlock()
	var destRing *Key
	if dest != 0 {
		r, err := t.keyringLocked(kt, dest)
		if err != nil {
			return 0, err
		}
		destRing = r
	}
	for _, id := range []int32{KeySpecThreadKeyring, KeySpecProcessKeyring, KeySpecSessionKeyring} {
		ring, err := t.lookupKeyLocked(kt, id, false, false)
		if err != nil {
			continue
		}
		if found := searchLocked(ring, typ, desc, 0); found != nil {
			if destRing != nil {
				linkLocked(destRing, found)
			}
			return found.Serial, nil
		}
	}
	return 0, unix.ENOKEY
}

// KeyOps is what a keyctl operation may do.
type KeyOps struct {
	t  *Task
	kt *keyTable
}

// Keyctl runs op with the key table locked.
func (t *Task) Keyctl(op func(*KeyOps) (uintptr, error)) (uintptr, error) {
	kt := t.k.keysLocked()
	kt.mu.Lock()
	defer kt.mu.Unlock()
	return op(&KeyOps{t: t, kt: kt})
}

// Lookup resolves id (KEYCTL_GET_KEYRING_ID and every operation's key).
func (o *KeyOps) Lookup(id int32, create, revokedOK bool) (*Key, error) {
	return o.t.lookupKeyLocked(o.kt, id, create, revokedOK)
}

// Keyring resolves id, which must be a keyring.
func (o *KeyOps) Keyring(id int32) (*Key, error) { return o.t.keyringLocked(o.kt, id) }

// JoinSession gives the task a new session keyring, anonymous ("_ses")
// or, with a name, the keyring of that name the task's user joined before
// (made now if none), as KEYCTL_JOIN_SESSION_KEYRING does.
func (o *KeyOps) JoinSession(name string) int32 {
	c := o.t.FSCreds()
	if name != "" {
		for _, k := range o.kt.serial {
			if k.Type == keyringType && k.Desc == name && k.uid == c.FSUID && !k.revoked && k.perm&keyPosSearch != 0 {
				o.t.sessionKeyring = k
				return k.Serial
			}
		}
	} else {
		name = "_ses"
	}
	k := o.kt.newKeyLocked(keyringType, name, nil, c.FSUID, c.FSGID, keyPosAll|keyUsrView|keyUsrRead)
	o.t.sessionKeyring = k
	return k.Serial
}

// Describe is KEYCTL_DESCRIBE's text: type;uid;gid;perm;description.
func (k *Key) Describe() string {
	return fmt.Sprintf("%s;%d;%d;%08x;%s", k.Type, k.uid, k.gid, k.perm, k.Desc)
}

// Read is KEYCTL_READ's data: a user key's payload, a keyring's serials
// (32-bit, in the order linked); EOPNOTSUPP for a logon key.
func (k *Key) Read() ([]byte, error) {
	switch k.Type {
	case "logon":
		return nil, unix.EOPNOTSUPP
	case keyringType:
		b := make([]byte, 0, 4*len(k.links))
		for _, l := range k.links {
			s := uint32(l.Serial)
			b = append(b, byte(s), byte(s>>8), byte(s>>16), byte(s>>24))
		}
		return b, nil
	}
	return k.payload, nil
}

// Update replaces a key's payload (KEYCTL_UPDATE): EOPNOTSUPP for a
// keyring.
func (k *Key) Update(payload []byte) error {
	if k.Type == keyringType {
		return unix.EOPNOTSUPP
	}
	if len(payload) == 0 || len(payload) > keyMaxUserData {
		return unix.EINVAL
	}
	k.payload = payload
	return nil
}

// Revoke revokes the key: it can no longer be used, only unlinked.
func (k *Key) Revoke() { k.revoked = true }

// Clear empties a keyring.
func (k *Key) Clear() { k.links = nil }

// Link links key into keyring k.
func (k *Key) Link(key *Key) { linkLocked(k, key) }

// Unlink takes key out of keyring k: ENOENT if it is not there.
func (k *Key) Unlink(key *Key) error {
	for i, l := range k.links {
		if l == key {
			k.links = append(k.links[:i:i], k.links[i+1:]...)
			return nil
		}
	}
	return unix.ENOENT
}

// Search is KEYCTL_SEARCH: the key of typ and desc in keyring k and the
// keyrings it holds (ENOKEY if none).
func (k *Key) Search(typ, desc string) (*Key, error) {
	if found := searchLocked(k, typ, desc, 0); found != nil {
		return found, nil
	}
	return nil, unix.ENOKEY
}

// cloneKeyrings gives a new task its keyrings, as Linux's copy_creds: the
// session keyring is passed on; a new thread of a task that has a thread
// keyring gets one of its own, a new process none (nor a process keyring,
// which its threads would share).
func (t *Task) cloneKeyrings(child *Task, flags uint64) {
	kt := t.k.keysLocked()
	kt.mu.Lock()
	defer kt.mu.Unlock()
	child.sessionKeyring = t.sessionKeyring
	if t.threadKeyring != nil && flags&unix.CLONE_THREAD != 0 {
		c := child.FSCreds()
		child.threadKeyring = kt.newKeyLocked(keyringType, "_tid", nil, c.FSUID, c.FSGID, keyPosAll|keyUsrView)
	}
}

// dropExecKeyrings forgets the thread and process keyrings at exec, as
// Linux's prepare_exec_creds: the new program keeps only the session
// keyring.
func (t *Task) dropExecKeyrings() {
	kt := t.k.keysLocked()
	kt.mu.Lock()
	t.threadKeyring, t.tg.processKeyring = nil, nil
	kt.mu.Unlock()
}
