package integration

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// tortureSeeds and tortureOps size the file-system torture runs.
const (
	tortureSeeds = 20
	tortureOps   = 3000
)

// TestFileSystemTorture replays random sequences of changes
// (testdata/fs_torture.c) on a host tmpfs and in moat, on the overlay root
// and on a bind-mounted directory, and compares every call's result and
// the trees they leave. The image under the overlay stays byte-for-byte as
// it was.
func TestFileSystemTorture(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: moat needs root to run a sandbox, and the reference is a tmpfs mounted here")
	}
	e := newEnv(t)
	e.buildTestdata("fs_torture")
	rootfs := filepath.Join(e.bundle, "rootfs")
	must(t, os.Mkdir(filepath.Join(rootfs, "t"), 0o755))
	image := treeDigest(t, rootfs)

	host := t.TempDir()
	must(t, unix.Mount("tmpfs", host, "tmpfs", 0, "mode=0755"))
	t.Cleanup(func() { unix.Unmount(host, unix.MNT_DETACH) })
	bind := t.TempDir()

	for _, where := range []string{"overlay", "bind"} {
		for seed := 1; seed <= tortureSeeds; seed++ {
			args := []string{strconv.Itoa(seed), strconv.Itoa(tortureOps)}
			clearDir(t, host)
			want := runNative(t, filepath.Join(rootfs, "bin/fs_torture"), append(args, host)...)

			spec := tortureSpec(append([]string{"/bin/fs_torture"}, append(args, "/t")...))
			if where == "bind" {
				clearDir(t, bind)
				spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/t", Type: "bind", Source: bind,
					Options: []string{"rbind", "rw"}})
			}
			e.writeSpec(spec)
			got, stderr, code, hung := e.runWithTimeout(fmt.Sprintf("torture-%s-%d", where, seed), time.Minute)
			if hung || code != 0 {
				t.Fatalf("%s, seed %d: exit %d (hung %v)\nstderr:\n%s", where, seed, code, hung, tail(stderr, 4000))
			}
			if got != want {
				t.Errorf("%s, seed %d: moat and the host's tmpfs disagree:\n%s", where, seed, firstDifference(want, got))
			}
		}
	}
	if after := treeDigest(t, rootfs); after != image {
		t.Errorf("the image under the overlay changed:\n%s", firstDifference(image, after))
	}
}

// tortureSpec runs args as root with every capability, on a writable
// root (the overlay), with /proc for linkat's /proc/self/fd/N.
func tortureSpec(args []string) specs.Spec {
	caps := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID"}
	return specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/",
			Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}},
		Root:     &specs.Root{Path: "rootfs"},
		Hostname: "moat-integration",
		Mounts:   []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
	}
}

// runNative runs prog on the host and returns its standard output.
func runNative(t *testing.T, prog string, args ...string) string {
	t.Helper()
	out, err := exec.Command(prog, args...).Output()
	if err != nil {
		t.Fatalf("%s %v natively: %v", prog, args, err)
	}
	return string(out)
}

// clearDir empties dir.
func clearDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
}

// treeDigest lists every file under root with its type, mode, owner, size,
// link target or contents' hash: two digests are equal if and only if
// nothing in the tree changed but times.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %o %d:%d %d", rel, st.Mode, st.Uid, st.Gid, st.Size)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", target)
		case unix.S_IFREG:
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			io.Copy(h, f)
			f.Close()
			fmt.Fprintf(&b, " %x", h.Sum(nil))
		}
		b.WriteString("\n")
		return nil
	})
	must(t, err)
	return b.String()
}

// firstDifference shows where two listings part.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  host: %s\n  moat: %s", i+1, wl, gl)
		}
	}
	return "(equal)"
}
