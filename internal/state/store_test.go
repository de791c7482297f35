package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockHolderEnv makes the test binary, run as a helper process, lock the
// state directory named in it and hold the lock until its stdin closes.
const lockHolderEnv = "MOAT_STATE_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if spec := os.Getenv(lockHolderEnv); spec != "" {
		root, id := filepath.Split(spec)
		d, err := Open(root, id)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		d.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "c1", "my_box.2+x-y", "0123456789abcdef"} {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "../x", "a b", "a\n", "é"} {
		if err := ValidateID(id); err == nil {
			t.Errorf("ValidateID(%q) accepted", id)
		}
	}
}

func TestCreateRefusesADuplicate(t *testing.T) {
	root := t.TempDir()
	d, err := Create(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	c := &Container{ID: "c1", Bundle: "/b", Recorded: Created}
	if err := d.Save(c); err != nil {
		t.Fatal(err)
	}
	d.Close()

	if _, err := Create(root, "c1"); !errors.Is(err, ErrExist) || err.Error() != "container with id exists: c1" {
		t.Fatalf("second Create = %v, want %q", err, "container with id exists: c1")
	}
	d, err = Open(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := d.Load()
	if err != nil || got.Bundle != "/b" {
		t.Errorf("existing container after a refused Create: %+v, %v", got, err)
	}
}

func TestOpenUnknown(t *testing.T) {
	if _, err := Open(t.TempDir(), "nope"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Open of an unknown id = %v, want ErrNotExist", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "no-root"), "nope"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Open under a missing root = %v, want ErrNotExist", err)
	}
	if _, err := Open(t.TempDir(), "../x"); err == nil || errors.Is(err, ErrNotExist) {
		t.Errorf("Open of a path-like id = %v, want an id error", err)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	root := t.TempDir()
	d, err := Create(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	empty, err := d.Load()
	if err != nil || empty.Recorded != Creating || empty.Status() != Stopped {
		t.Fatalf("Load before any Save = %+v, %v; want a creating record that derives to stopped", empty, err)
	}
	want := &Container{
		ID: "c1", Bundle: "/b", Rootfs: "/b/rootfs", Created: time.Now().UTC().Round(0),
		Annotations: map[string]string{"k": "v"}, Recorded: Created,
		Sentry: Process{PID: 10, StartTime: 20}, Gofer: Process{PID: 11, StartTime: 21},
	}
	if err := d.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := d.Load()
	if err != nil {
		t.Fatal(err)
	}
	got.Owner = ""
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) || !got.Created.Equal(want.Created) {
		t.Errorf("Load = %s, want %s", gotJSON, wantJSON)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "c1"))
	if len(entries) != 1 || entries[0].Name() != stateFile {
		t.Errorf("state directory holds %v, want only %s", entries, stateFile)
	}
}

func TestSaveIsAtomic(t *testing.T) {
	root := t.TempDir()
	d, err := Create(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	big := map[string]string{"pad": strings.Repeat("x", 1<<16)}
	if err := d.Save(&Container{ID: "c1", Annotations: big}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			big["n"] = string(rune('a' + i%26))
			if err := d.Save(&Container{ID: "c1", Annotations: big}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// A reader that takes no lock, as `moat list`, must always see a whole record.
	for i := 0; i < 2000; i++ {
		list, err := List(root)
		if err != nil {
			t.Fatalf("List while saving: %v", err)
		}
		if len(list) != 1 || len(list[0].Annotations["pad"]) != 1<<16 {
			t.Fatalf("List while saving saw a torn record")
		}
	}
	close(stop)
	wg.Wait()
}

func TestLockExcludesAnotherGoroutine(t *testing.T) {
	root := t.TempDir()
	first, err := Create(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	acquired := make(chan *Dir)
	go func() {
		second, err := Open(root, "c1")
		if err != nil {
			t.Error(err)
		}
		acquired <- second
	}()
	select {
	case <-acquired:
		t.Fatal("a second Open took the lock while the first was held")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	select {
	case second := <-acquired:
		if second != nil {
			second.Close()
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second Open did not get the lock after the first was released")
	}
}

func TestLockExcludesAnotherProcess(t *testing.T) {
	root := t.TempDir()
	d, err := Create(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()

	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), lockHolderEnv+"="+filepath.Join(root, "c1"))
	release, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		release.Close()
		t.Fatalf("helper: %q", line)
	}

	acquired := make(chan error, 1)
	go func() {
		d, err := Open(root, "c1")
		if err == nil {
			d.Close()
		}
		acquired <- err
	}()
	select {
	case <-acquired:
		t.Fatal("Open took the lock while another process held it")
	case <-time.After(200 * time.Millisecond):
	}
	release.Close()
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open did not get the lock after the other process let go")
	}
}

func TestWaiterSeesTheDeletion(t *testing.T) {
	root := t.TempDir()
	first, err := Create(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		d, err := Open(root, "c1")
		if err == nil {
			d.Close()
		}
		result <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the waiter open the directory and block
	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	first.Close()
	if err := <-result; !errors.Is(err, ErrNotExist) {
		t.Errorf("Open that waited for a deletion = %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(root, "c1")); !os.IsNotExist(err) {
		t.Errorf("state directory still there: %v", err)
	}
}

func TestControlSocketPathIsShort(t *testing.T) {
	root := filepath.Join(t.TempDir(), strings.Repeat("r", 100))
	d, err := Create(root, strings.Repeat("i", 60))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if p := d.ControlSocket(); len(p) > 107 {
		t.Errorf("ControlSocket() = %q (%d bytes), too long for a unix socket", p, len(p))
	}
}

func TestListSkipsStrangers(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"a", "b"} {
		d, err := Create(root, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Save(&Container{ID: id, Recorded: Created}); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	os.WriteFile(filepath.Join(root, "stray-file"), nil, 0o600)
	list, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" || list[0].Owner == "" {
		t.Errorf("List = %+v", list)
	}
	if list, err := List(filepath.Join(root, "missing")); err != nil || len(list) != 0 {
		t.Errorf("List of a missing root = %v, %v", list, err)
	}
}
