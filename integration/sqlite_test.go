package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sqliteWAL fills a WAL-mode database in dir with 10,000 rows, in 100
// transactions of 100 rows each made by its own sqlite3 process, while
// another process reads it over and over, then reads it back. WAL mode is
// what needs the kernel most: every connection maps the -shm index
// MAP_SHARED and takes fcntl record locks on bytes of it and of the
// database, and readers and the writer go on side by side.
func sqliteWAL(dir string) string {
	return fmt.Sprintf(`set -e
mkdir -p %[1]s
cd %[1]s
sqlite3 test.db 'PRAGMA journal_mode=WAL; CREATE TABLE t(n INTEGER PRIMARY KEY, v TEXT);'
(
  for i in $(seq 1 40); do
    sqlite3 -cmd '.timeout 10000' test.db 'SELECT count(*) FROM t;' > /dev/null
  done
) &
reader=$!
for b in $(seq 0 99); do
  {
    echo 'BEGIN;'
    for i in $(seq 1 100); do
      n=$((b * 100 + i))
      echo "INSERT INTO t VALUES($n, 'row $n');"
    done
    echo 'COMMIT;'
  } | sqlite3 -cmd '.timeout 10000' test.db
done
wait $reader
sqlite3 test.db 'PRAGMA journal_mode; PRAGMA integrity_check; SELECT count(*), sum(n), min(n), max(n) FROM t; SELECT v FROM t WHERE n = 4242;'
ls
`, dir)
}

// sqliteWALOut is what sqliteWAL prints: the journal mode set, then kept,
// every row, and only the database once the last connection has
// checkpointed and removed the WAL and its index.
const sqliteWALOut = `wal
wal
ok
10000|50005000|1|10000
row 4242
test.db
`

// TestSqliteWALOnTheOverlayRootAndInABindMount runs sqliteWAL in runc and
// in moat, on the root file system made writable (moat's overlay; for
// runc a host overlayfs over the same image, so that neither writes it)
// and in the bind-mounted workspace, and compares the results.
func TestSqliteWALOnTheOverlayRootAndInABindMount(t *testing.T) {
	runc, dir := realSetup(t)
	runcRoot := hostOverlay(t, dir)
	refs := newRuncRunner(t, runc, runcRoot)
	refs.writableRoot = true
	moat := newMoatRunner(t, dir)
	moat.writableRoot = true
	for _, where := range []struct{ name, dir string }{{"overlay-root", "/root/db"}, {"bind-workspace", "/work/db"}} {
		t.Run(where.name, func(t *testing.T) {
			args := bash(sqliteWAL(where.dir))
			want := refs.run(t, args, 3*time.Minute)
			check := realCheck{name: "sqlite-wal", args: args, stdout: sqliteWALOut, timeout: 3 * time.Minute}
			if problem := check.mismatch(want); problem != "" {
				t.Fatalf("runc, the reference, fails: %s", problem)
			}
			got := moat.run(t, args, 3*time.Minute)
			t.Logf("moat %v, runc %v", got.took.Round(time.Millisecond), want.took.Round(time.Millisecond))
			if problem := differ(got, want); problem != "" {
				t.Errorf("%s\nmoat's log of the run:\n%s", problem, got.log)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "root/db")); !os.IsNotExist(err) {
		t.Errorf("the image has /root/db after the runs (%v): a runtime wrote to it", err)
	}
}

// hostOverlay mounts an overlayfs of a fresh upper directory over the
// directory that holds image, and returns where image shows in it: a
// rootfs below the mount point, not the mount itself, so that the runs'
// check for mounts left under their rootfs does not find this one. It is
// unmounted when the test ends.
func hostOverlay(t *testing.T, image string) string {
	t.Helper()
	base := t.TempDir()
	upper, work, merged := filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{upper, work, merged} {
		must(t, os.Mkdir(d, 0o755))
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", filepath.Dir(image), upper, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("no host overlayfs for runc's root (%v)", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", merged, err)
		}
	})
	return filepath.Join(merged, filepath.Base(image))
}
