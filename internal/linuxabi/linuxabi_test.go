package linuxabi

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fromHeaders are the constants the kernel's UAPI headers (linux-libc-dev)
// define, with the C expression that gives each.
var fromHeaders = []struct {
	c    string
	want int64
}{
	{"FIONREAD", FIONREAD}, {"FIONBIO", FIONBIO}, {"FIONCLEX", FIONCLEX}, {"FIOCLEX", FIOCLEX},
	{"FIOASYNC", FIOASYNC}, {"FIOQSIZE", FIOQSIZE}, {"FIGETBSZ", FIGETBSZ}, {"FIFREEZE", FIFREEZE},
	{"FITHAW", FITHAW}, {"FS_IOC_FIEMAP", FS_IOC_FIEMAP},
	{"_IOR(0x15, 0, char[17])", FS_IOC_GETFSUUID}, {"_IOR(0x15, 1, char[129])", FS_IOC_GETFSSYSFSPATH},
	{"FUTEX_WAIT", FUTEX_WAIT}, {"FUTEX_WAKE", FUTEX_WAKE}, {"FUTEX_REQUEUE", FUTEX_REQUEUE},
	{"FUTEX_CMP_REQUEUE", FUTEX_CMP_REQUEUE}, {"FUTEX_WAKE_OP", FUTEX_WAKE_OP},
	{"FUTEX_WAIT_BITSET", FUTEX_WAIT_BITSET}, {"FUTEX_WAKE_BITSET", FUTEX_WAKE_BITSET},
	{"FUTEX_PRIVATE_FLAG", FUTEX_PRIVATE_FLAG}, {"FUTEX_CLOCK_REALTIME", FUTEX_CLOCK_REALTIME},
	{"FUTEX_BITSET_MATCH_ANY", FUTEX_BITSET_MATCH_ANY}, {"FUTEX_WAITERS", FUTEX_WAITERS},
	{"FUTEX_OWNER_DIED", FUTEX_OWNER_DIED}, {"FUTEX_TID_MASK", FUTEX_TID_MASK},
	{"ROBUST_LIST_LIMIT", ROBUST_LIST_LIMIT}, {"sizeof(struct robust_list_head)", SizeofRobustListHead},
	{"ARCH_SET_GS", ARCH_SET_GS}, {"ARCH_SET_FS", ARCH_SET_FS}, {"ARCH_GET_FS", ARCH_GET_FS},
	{"ARCH_GET_GS", ARCH_GET_GS}, {"ARCH_GET_CPUID", ARCH_GET_CPUID}, {"ARCH_SET_CPUID", ARCH_SET_CPUID},
	{"(size_t)SIG_DFL", SIG_DFL}, {"(size_t)SIG_IGN", SIG_IGN},
	{"SA_NOCLDSTOP", SA_NOCLDSTOP}, {"SA_NOCLDWAIT", SA_NOCLDWAIT}, {"SA_SIGINFO", SA_SIGINFO},
	{"SA_RESTORER", SA_RESTORER}, {"SA_ONSTACK", SA_ONSTACK}, {"SA_RESTART", SA_RESTART},
	{"SA_NODEFER", SA_NODEFER}, {"SA_RESETHAND", SA_RESETHAND},
	{"SS_ONSTACK", SS_ONSTACK}, {"SS_DISABLE", SS_DISABLE}, {"SS_AUTODISARM", SS_AUTODISARM},
	{"MINSIGSTKSZ", MINSIGSTKSZ},
	{"SI_USER", SI_USER}, {"SI_KERNEL", SI_KERNEL}, {"SI_QUEUE", SI_QUEUE}, {"SI_TIMER", SI_TIMER},
	{"SI_TKILL", SI_TKILL}, {"CLD_EXITED", CLD_EXITED}, {"CLD_KILLED", CLD_KILLED},
	{"CLD_DUMPED", CLD_DUMPED}, {"CLD_STOPPED", CLD_STOPPED}, {"CLD_CONTINUED", CLD_CONTINUED},
	{"O_LARGEFILE", O_LARGEFILE}, {"UIO_MAXIOV", UIO_MAXIOV},
	{"XATTR_NAME_MAX", XATTR_NAME_MAX}, {"XATTR_SIZE_MAX", XATTR_SIZE_MAX}, {"XATTR_LIST_MAX", XATTR_LIST_MAX},
	{"sizeof(struct epoll_event)", 12}, // EP_MAX_EVENTS divides by it
}

// TestConstantsMatchTheKernelHeaders compiles a C program that prints each
// constant as the kernel's UAPI headers define it.
func TestConstantsMatchTheKernelHeaders(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not on PATH (make deps installs it)")
	}
	dir := t.TempDir()
	var c strings.Builder
	for _, h := range []string{"stddef.h", "stdio.h", "linux/futex.h", "asm/prctl.h", "asm/ioctls.h",
		"linux/uio.h", "linux/signal.h", "asm-generic/fcntl.h", "linux/eventpoll.h", "linux/limits.h", "linux/fs.h", "linux/fiemap.h"} {
		fmt.Fprintf(&c, "#include <%s>\n", h)
	}
	c.WriteString("int main(void) {\n")
	for _, h := range fromHeaders {
		fmt.Fprintf(&c, "\tprintf(\"%%lld\\n\", (long long)(%s));\n", h.c)
	}
	c.WriteString("\treturn 0;\n}\n")
	src, bin := filepath.Join(dir, "abi.c"), filepath.Join(dir, "abi")
	if err := os.WriteFile(src, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-o", bin, src).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "No such file") {
			t.Skipf("the kernel headers are not installed (linux-libc-dev): %s", out)
		}
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(fromHeaders) {
		t.Fatalf("got %d values, want %d", len(lines), len(fromHeaders))
	}
	for i, h := range fromHeaders {
		got, err := strconv.ParseInt(lines[i], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got != h.want {
			t.Errorf("%s is %#x in the headers, %#x here", h.c, got, h.want)
		}
	}
}

// inUnixOnPurpose are the names unix defines that this package defines
// too, because unix's value is not the kernel's.
var inUnixOnPurpose = map[string]string{
	"O_LARGEFILE": "unix has the C library's 0",
}

// TestNothingHereIsInUnix keeps the package to what golang.org/x/sys/unix
// lacks: a constant unix gains must be taken from unix instead.
func TestNothingHereIsInUnix(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Skipf("golang.org/x/sys is not in the module cache: %v", err)
	}
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", "amd64", false
	pkg, err := ctx.ImportDir(filepath.Join(strings.TrimSpace(string(dir)), "unix"), 0)
	if err != nil {
		t.Fatal(err)
	}
	unixConsts := map[string]bool{}
	for _, f := range pkg.GoFiles {
		for _, name := range constNames(t, filepath.Join(pkg.Dir, f)) {
			unixConsts[name] = true
		}
	}
	if !unixConsts["O_RDONLY"] {
		t.Fatal("found no constants in the unix package")
	}
	for _, name := range constNames(t, "linuxabi.go") {
		if unixConsts[name] && inUnixOnPurpose[name] == "" {
			t.Errorf("%s is defined by golang.org/x/sys/unix: use unix.%s", name, name)
		}
	}
}

// constNames are the top-level constants a Go file declares.
func constNames(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, id := range s.(*ast.ValueSpec).Names {
					names = append(names, id.Name)
				}
			}
		}
	}
	return names
}
