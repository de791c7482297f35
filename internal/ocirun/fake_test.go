package ocirun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRuntime stands in for runc without root: each container is a file
// ROOT/ID holding the pid of its process, and every call is logged to
// ROOT.log as the runtime received it. `run` records itself and sleeps,
// never ending by itself; `kill` kills it unless $FAKE_KILL is ignored;
// `delete` refuses ids starting with "stuck"; `list` fails when
// $FAKE_LIST is broken.
const fakeRuntime = `#!/bin/sh
[ "$1" = --root ] || { echo "no --root" >&2; exit 64; }
root=$2
echo "$*" >> "$root.log"
shift 2
while [ "${1#--}" != "$1" ]; do shift; done
sub=$1
shift
case $sub in
list)
	[ "$FAKE_LIST" = broken ] && { echo "unknown flag" >&2; exit 2; }
	ls "$root" ;;
state)
	[ -f "$root/$1" ] || { echo "container $1 does not exist" >&2; exit 1; }
	printf '{"ociVersion":"1.0.2","id":"%s","status":"running","pid":%s,"bundle":"/b"}\n' "$1" "$(cat "$root/$1")" ;;
kill)
	[ "$FAKE_KILL" = ignored ] || kill -9 "$(cat "$root/$1")" ;;
delete)
	case $2 in stuck*) echo "cannot delete $2" >&2; exit 1 ;; esac
	rm -f "$root/$2" ;;
run)
	echo $$ > "$root/$3"
	exec sleep 600 ;;
*)
	echo "unknown subcommand $sub" >&2; exit 64 ;;
esac
`

// newFake writes the fake runtime and returns it at an empty state
// directory.
func newFake(t *testing.T) Root {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-runtime")
	if err := os.WriteFile(bin, []byte(fakeRuntime), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "state")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return (&Runtime{Name: "fake", Path: bin, Flags: []string{"--debug"}}).At(root)
}

// addContainers makes the fake runtime's state directory hold ids.
func addContainers(t *testing.T, r Root, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := os.WriteFile(filepath.Join(r.Dir, id), []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// calls are the fake runtime's command lines so far.
func calls(t *testing.T, r Root) []string {
	t.Helper()
	data, err := os.ReadFile(r.Dir + ".log")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}
