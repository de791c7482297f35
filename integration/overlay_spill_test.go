package integration

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/bundle"
	"github.com/moat-sandbox/moat/internal/control"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TestOverlaySpill writes two 192 MiB files to the overlay root of a
// container whose upper layer may keep 8 MiB in memory: the data reads
// back exact, the sentry's share of the memory file stays far below the
// files' size, and the spill file in the state directory holds the rest.
func TestOverlaySpill(t *testing.T) {
	e := newEnv(t)
	rootfs := filepath.Join(e.bundle, "rootfs")
	for _, applet := range []string{"yes", "head", "cp", "sha256sum", "mv"} {
		must(t, os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)))
	}
	image := treeDigest(t, rootfs)
	out := t.TempDir()
	const line, size = "abcdefghijklmno\n", 192 << 20
	sum := sha256.Sum256(bytes.Repeat([]byte(line), size/len(line)))
	want := hex.EncodeToString(sum[:])

	script := fmt.Sprintf("yes %s | head -c %d > /big && cp /big /big2 && sha256sum /big /big2 > /out/sum.tmp && mv /out/sum.tmp /out/sum; sleep 60",
		strings.TrimSuffix(line, "\n"), size)
	e.writeSpec(specs.Spec{
		Version:     specs.Version,
		Process:     &specs.Process{Args: []string{"sh", "-c", script}, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:        &specs.Root{Path: "rootfs"},
		Hostname:    "moat-integration",
		Annotations: map[string]string{bundle.OverlayMemoryAnnotation: "8m"},
		Mounts:      []specs.Mount{{Destination: "/out", Type: "bind", Source: out, Options: []string{"rbind", "rw"}}},
	})
	if _, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "spill"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	defer func() {
		e.moatCmd("kill", "spill", "KILL")
		e.waitStatus("spill", specs.StateStopped)
		e.moatCmd("delete", "spill")
	}()
	sentry := e.state("spill").Pid
	if _, errOut, code := e.moatCmd("start", "spill"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}

	var sums []byte
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var err error
		if sums, err = os.ReadFile(filepath.Join(out, "sum")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the guest did not write and hash its files within 2 minutes")
		}
	}
	for _, f := range []string{"/big", "/big2"} {
		if !strings.Contains(string(sums), want+"  "+f+"\n") {
			t.Errorf("sha256sum in the guest:\n%s\nwant %s for %s", sums, want, f)
		}
	}

	// The memory file's pages the sentry touched, and the spill file's.
	shmem := statusKB(t, sentry, "RssShmem")
	t.Logf("the sentry holds %d KiB of the memory file", shmem)
	if shmem > 96<<10 {
		t.Errorf("the sentry holds %d KiB of the memory file, with 384 MiB written and 8 MiB allowed in memory", shmem)
	}
	var st unix.Stat_t
	must(t, unix.Stat(fmt.Sprintf("/proc/%d/fd/%d", sentry, control.BootSpillFD), &st))
	if spilled := st.Blocks * 512; spilled < 300<<20 {
		t.Errorf("the spill file holds %d MiB, want most of the 384 MiB written", spilled>>20)
	}
	link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", sentry, control.BootSpillFD))
	if !strings.Contains(link, "(deleted)") && !strings.Contains(link, "/#") {
		t.Errorf("the spill file has a name: %s", link)
	}
	if after := treeDigest(t, rootfs); after != image {
		t.Errorf("the image under the overlay changed:\n%s", firstDifference(image, after))
	}
}

// statusKB is field (a size in kB) of /proc/pid/status.
func statusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		var kb int64
		if _, err := fmt.Sscanf(s.Text(), field+": %d kB", &kb); err == nil {
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
