package e2b

import (
	"os"
	"path/filepath"
	"strings"
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

func TestAPoolBootsNoMoreThanItsSizeAndReplacesWhatIsReleased(t *testing.T) {
	dir := t.TempDir()
	moat, created := filepath.Join(dir, "moat"), filepath.Join(dir, "created")
	if err := os.WriteFile(moat, []byte(fakeMoat), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CREATED", created)
	s, err := New(Config{APIKey: "k", StateDir: filepath.Join(dir, "state"), Templates: map[string]string{"base": t.TempDir()},
		Moat: moat, Pool: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := s.pools["base"]
	receive := func() *instance {
		t.Helper()
		select {
		case inst := <-p.ready:
			return inst
		case <-time.After(poolTestWait):
			t.Fatalf("the pool booted nothing within %v", poolTestWait)
			return nil
		}
	}
	// Taken straight from the pool, not handed over: none is released,
	// so the pool may boot nothing more.
	taken := []*instance{receive(), receive()}
	p.release()
	taken = append(taken, receive())
	s.Close()
	data, err := os.ReadFile(created)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Fields(string(data)); len(ids) != 3 {
		t.Errorf("a pool of 2 with one sandbox released booted %d: %v; want 3", len(ids), ids)
	}
	for _, inst := range taken {
		if err := s.rt.destroy(inst); err != nil {
			t.Error(err)
		}
	}
	if left, err := os.ReadDir(s.rt.root.Dir); err != nil || len(left) != 0 {
		t.Errorf("left behind: %v %v", left, err)
	}
}
