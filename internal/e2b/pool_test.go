package e2b

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeMoat is a moat command line that makes containers as directories of
// its --root and writes the id of each it creates to the file created.
const fakeMoat = `#!/bin/sh
root=
while [ $# -gt 0 ]; do
	case $1 in
	--root|--log|--platform|--rootfs-writes) [ $1 = --root ] && root=$2; shift 2 ;;
	*) break ;;
	esac
done
sub=$1
shift
for id; do :; done
case $sub in
create) mkdir "$root/$id" && echo "$id" >>"$CREATED" ;;
delete) rm -rf "$root/$id" ;;
list) ls "$root" ;;
esac
`

// poolTestWait bounds a wait for the fake moat's boots, which take a few
// processes each.
const poolTestWait = time.Minute

// poolServer is a Server on the fake moat with one template, base, and
// pools of at most max, whose clock and view of the host's memory
// (roomy: there is room) the test sets.
type poolServer struct {
	*Server
	t       *testing.T
	created string // the fake moat's list of ids created

	mu     sync.Mutex
	clock  time.Time
	roomy  atomic.Bool
	closed bool
}

func newPoolServer(t *testing.T, max int, roomy bool) *poolServer {
	dir := t.TempDir()
	moat := filepath.Join(dir, "moat")
	if err := os.WriteFile(moat, []byte(fakeMoat), 0o755); err != nil {
		t.Fatal(err)
	}
	ps := &poolServer{t: t, created: filepath.Join(dir, "created"), clock: time.Unix(1_000_000, 0)}
	ps.roomy.Store(roomy)
	t.Setenv("CREATED", ps.created)
	s, err := New(Config{APIKey: "k", StateDir: filepath.Join(dir, "state"), Templates: map[string]string{"base": t.TempDir()},
		Moat: moat, Pool: max, now: ps.now, memoryLeavesRoom: ps.roomy.Load})
	if err != nil {
		t.Fatal(err)
	}
	ps.Server = s
	t.Cleanup(ps.close)
	return ps
}

func (ps *poolServer) now() time.Time {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.clock
}

func (ps *poolServer) advance(d time.Duration) {
	ps.mu.Lock()
	ps.clock = ps.clock.Add(d)
	ps.mu.Unlock()
}

func (ps *poolServer) close() {
	if !ps.closed {
		ps.closed = true
		ps.Close()
	}
}

// booted is how many sandboxes the fake moat has created.
func (ps *poolServer) booted() int {
	data, _ := os.ReadFile(ps.created)
	return len(strings.Fields(string(data)))
}

// existing is how many of its containers exist.
func (ps *poolServer) existing() int {
	entries, err := os.ReadDir(ps.rt.root.Dir)
	if err != nil {
		ps.t.Fatal(err)
	}
	return len(entries)
}

// waitUntil waits for cond, failing the test after poolTestWait.
func (ps *poolServer) waitUntil(what string, cond func() bool) {
	ps.t.Helper()
	for deadline := time.Now().Add(poolTestWait); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			ps.t.Fatalf("not so within %v: %s (%d booted, %d exist, %d ready)", poolTestWait, what,
				ps.booted(), ps.existing(), len(ps.pools["base"].ready))
		}
	}
}

func TestAPoolKeepsOneUntilAskedThenTheBusiestSecondsWorthAtMostItsSize(t *testing.T) {
	ps := newPoolServer(t, 3, true)
	p := ps.pools["base"]
	ps.waitUntil("one sandbox ready", func() bool { return len(p.ready) == 1 })
	time.Sleep(poolRecheck * 3 / 2)
	if n := ps.booted(); n != 1 {
		t.Fatalf("a pool no create has asked booted %d, want 1", n)
	}
	// Four creates in one second: the first gets the ready sandbox, and
	// the pool grows to its size, 3, not 4, counting the one handed over.
	var taken []*instance
	for range 4 {
		if inst := p.take(); inst != nil {
			taken = append(taken, inst)
		}
	}
	if len(taken) != 1 || p.target() != 3 {
		t.Fatalf("4 takes from a pool of 1 ready: %d handed over, target %d; want 1 and 3", len(taken), p.target())
	}
	ps.waitUntil("two more ready beside the one handed over", func() bool { return len(p.ready) == 2 })
	p.release()
	ps.waitUntil("three ready once it is released", func() bool { return len(p.ready) == 3 })
	time.Sleep(poolRecheck * 3 / 2)
	if n := ps.booted(); n != 4 {
		t.Errorf("booted %d, want 4: the first, two for the demand, one for the release", n)
	}
	// A minute later the demand has passed: the pool kills down to one.
	ps.advance(demandWindow * time.Second)
	ps.waitUntil("one ready once the demand has passed", func() bool { return len(p.ready) == 1 && ps.existing() == 2 })
	for _, inst := range taken {
		if err := ps.rt.destroy(inst); err != nil {
			t.Error(err)
		}
	}
	ps.close()
	if n := ps.existing(); n != 0 {
		t.Errorf("%d containers left behind", n)
	}
}

func TestAPoolBootsNothingWhileTheHostsMemoryIsBelowTheReserve(t *testing.T) {
	ps := newPoolServer(t, 2, false)
	p := ps.pools["base"]
	p.take()
	p.take()
	time.Sleep(poolRecheck * 3 / 2)
	if n := ps.booted(); n != 0 {
		t.Fatalf("asked for two with the host's memory below the reserve, the pool booted %d", n)
	}
	ps.roomy.Store(true)
	ps.waitUntil("two ready once the memory is back", func() bool { return len(p.ready) == 2 })
	if n := ps.booted(); n != 2 {
		t.Errorf("booted %d, want 2", n)
	}
}

func TestDemandIsTheBusiestSecondOfTheWindow(t *testing.T) {
	var d demand
	t0 := time.Unix(2_000_000, 0)
	for range 3 {
		d.add(t0)
	}
	d.add(t0.Add(10 * time.Second))
	if got := d.peak(t0.Add(30 * time.Second)); got != 3 {
		t.Errorf("peak = %d, want 3", got)
	}
	// The busy second falls out of the window; the later one stays.
	if got := d.peak(t0.Add(demandWindow * time.Second)); got != 1 {
		t.Errorf("peak a window later = %d, want 1", got)
	}
	if got := d.peak(t0.Add((demandWindow + 10) * time.Second)); got != 0 {
		t.Errorf("peak once both have passed = %d, want 0", got)
	}
	// A slot reused for a later second starts again from zero.
	d.add(t0.Add(demandWindow * time.Second))
	if got := d.peak(t0.Add(demandWindow * time.Second)); got != 1 {
		t.Errorf("peak after the slot's reuse = %d, want 1", got)
	}
}

func TestReadMeminfoTakesTotalAndAvailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(path, []byte("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   12000000 kB\n"), 0o644)
	total, available, ok := readMeminfo(path)
	if !ok || total != 24000000<<10 || available != 12000000<<10 {
		t.Errorf("readMeminfo = %d, %d, %v", total, available, ok)
	}
	os.WriteFile(path, []byte("MemTotal:       24000000 kB\n"), 0o644)
	if _, _, ok := readMeminfo(path); ok {
		t.Error("a meminfo without MemAvailable read as complete")
	}
}
