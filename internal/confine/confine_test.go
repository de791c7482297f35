package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The confinement itself is tested in a child (this test binary, started
// again in the sandbox namespaces, as the CLI starts the sentry and the
// gofer) that confines itself and reports what it can still do.

const childEnv = "MOAT_CONFINE_CHILD"

func TestMain(m *testing.M) {
	if scenario := os.Getenv(childEnv); scenario != "" {
		os.Exit(childMain(scenario, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// runChild runs scenario in the sandbox namespaces, mapped as the process
// it stands for is when the caller is not root (the gofer for "trees", the
// sentry otherwise), and returns its output.
func runChild(t *testing.T, scenario, arg string) (string, *os.ProcessState) {
	t.Helper()
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		t.Skip("no user namespaces")
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0); e == syscall.ENOTSUP {
		t.Skip("this test binary links cgo (the race detector does), whose processes cannot change every thread's credentials: DropPrivileges is for the cgo-free moat binary")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	cmd.Env = append(os.Environ(), childEnv+"="+scenario)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	caller := IDMap{Host: os.Geteuid(), HostGroup: os.Getegid()}
	if scenario == "trees" {
		GoferProcAttr(cmd.SysProcAttr, caller, false)
	} else {
		SentryProcAttr(cmd.SysProcAttr, caller, false)
	}
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Skipf("cannot start a child in new namespaces: %v", err)
	}
	return string(out), cmd.ProcessState
}

func childMain(scenario, arg string) int {
	switch scenario {
	case "empty-root":
		if err := EnterEmptyRoot(); err != nil {
			fmt.Println("EnterEmptyRoot:", err)
			return 1
		}
		if err := DropPrivileges(0, nil); err != nil {
			fmt.Println("DropPrivileges:", err)
			return 1
		}
		report()
	case "trees":
		var trees []Tree
		for _, p := range strings.Split(arg, ",") {
			path, ro := strings.CutSuffix(p, ":ro")
			trees = append(trees, Tree{Path: path, ReadOnly: ro})
		}
		paths, err := EnterTrees(trees)
		if err != nil {
			fmt.Println("EnterTrees:", err)
			return 1
		}
		fmt.Println("paths", strings.Join(paths, " "))
		report()
		for _, p := range paths {
			f, err := os.Create(filepath.Join(p, "new"))
			if err == nil {
				f.Close()
			}
			fmt.Printf("create in %s: %v\n", p, err)
		}
	case "kill":
		if err := DropPrivileges(0, nil); err != nil {
			fmt.Println("DropPrivileges:", err)
			return 1
		}
		if err := SentryCalls.Install(Kill); err != nil {
			fmt.Println("Install:", err)
			return 1
		}
		os.Stdout.WriteString("installed\n")
		// Every thread carries the filter: open from a new thread too.
		done := make(chan struct{})
		go func() { unix.Open("/", unix.O_RDONLY, 0); close(done) }()
		<-done
		os.Stdout.WriteString("still alive\n")
	}
	return 0
}

// report prints the root's entries and the process's privileges.
func report() {
	entries, err := os.ReadDir("/")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	fmt.Printf("root [%s] %v\n", strings.Join(names, " "), err)
	_, err = os.Stat("/etc/passwd")
	fmt.Println("host file:", err)
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	unix.Capget(&hdr, &data[0])
	bound, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0)
	nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("caps %x %x bounding-sys-admin %d nnp %d dumpable %d\n", data[0].Effective, data[0].Permitted, bound, nnp, dumpable)
	var st unix.Statfs_t
	unix.Statfs("/", &st)
	fmt.Printf("root read-only %v nosuid %v noexec %v\n", st.Flags&unix.ST_RDONLY != 0, st.Flags&unix.ST_NOSUID != 0,
		st.Flags&unix.ST_NOEXEC != 0)
}

// TestEmptyRootLeavesNothingNameable: after EnterEmptyRoot and
// DropPrivileges the root is an empty, read-only, noexec directory no one
// may even list, no host file is found, and no capability, bounding or
// effective, is left.
func TestEmptyRootLeavesNothingNameable(t *testing.T) {
	out, ps := runChild(t, "empty-root", "")
	for _, want := range []string{"root [] open /: permission denied", "host file: stat /etc/passwd: permission denied",
		"caps 0 0 bounding-sys-admin 0 nnp 1 dumpable 0", "root read-only true nosuid true noexec true"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if !ps.Success() {
		t.Errorf("child: %v\n%s", ps, out)
	}
}

// TestTreesAreAllThatIsNameable: EnterTrees shows a directory and a single
// file as /0 and /1, nothing else, and the host kernel refuses writes to
// the tree served read-only.
func TestTreesAreAllThatIsNameable(t *testing.T) {
	dir := t.TempDir()
	rw := filepath.Join(dir, "rw")
	ro := filepath.Join(dir, "ro")
	file := filepath.Join(dir, "file")
	for _, d := range []string{rw, ro} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(rw, "etc")); err != nil {
		t.Fatal(err)
	}
	out, ps := runChild(t, "trees", rw+","+ro+":ro,"+file)
	for _, want := range []string{"paths /0 /1 /2", "root [0 1 2] <nil>", "host file: stat /etc/passwd: no such file or directory",
		"root read-only true nosuid true noexec true", "create in /0: <nil>", "create in /1: open /1/new: read-only file system"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(rw, "new")); err != nil || !ps.Success() {
		t.Errorf("the writable tree did not get the file (%v), or the child failed (%v):\n%s", err, ps, out)
	}
}

// TestFilterKillsTheProcessForACallOutsideTheList: the sentry's filter is
// on every thread, and an open from any kills the whole process.
func TestFilterKillsTheProcessForACallOutsideTheList(t *testing.T) {
	out, ps := runChild(t, "kill", "")
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if !strings.Contains(out, "installed") || strings.Contains(out, "still alive") || !ws.Signaled() || ws.Signal() != unix.SIGSYS {
		t.Errorf("child ended %v after:\n%s", ps, out)
	}
}
