#!/usr/bin/env bash
# demo.sh MOAT DIR: builds a small OCI bundle in DIR (Debian's static busybox
# and a static C program) and runs a few programs in moat sandboxes, then
# an agent's tool call with `moat sandbox --` in a scratch directory.
set -euo pipefail
moat=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$dir"
mkdir -p "$dir/rootfs/bin" "$dir/rootfs/etc" "$dir/rootfs/dev" "$dir/rootfs/tmp" "$dir/state"
cp /usr/bin/busybox "$dir/rootfs/bin/busybox"
for applet in sh ls cat echo uname id; do ln -s busybox "$dir/rootfs/bin/$applet"; done
echo "root:x:0:0:root:/root:/bin/sh" > "$dir/rootfs/etc/passwd"
echo "root:x:0:" > "$dir/rootfs/etc/group"
gcc -static -O2 -o "$dir/rootfs/bin/hello" "$here/hello.c"

# run ARGS...: one sandbox per command, from its own config.json.
run() {
	local args=""
	for a in "$@"; do args="$args\"$a\","; done
	cat > "$dir/config.json" <<JSON
{
  "ociVersion": "1.0.2",
  "process": {"args": [${args%,}], "env": ["PATH=/bin"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "moat-demo"
}
JSON
	echo "\$ moat run  # $*"
	local status=0
	"$moat" --root "$dir/state" run --bundle "$dir" "demo-$$-$RANDOM" || status=$?
	[ "$status" = 0 ] || echo "(moat run exited with the guest's status, $status)"
	echo
}

run hello
run uname -a
run id
run ls -la /
run sh -c 'exit 3'

# Last, the local mode (docs/agents.md): an agent's tool call, run in a
# sandbox of the host's own root with no bundle at all. The current
# directory is shared writable; the rest of the host is read-only under an
# overlay that vanishes with the sandbox, the credential stores are
# hidden, and there is no network but the sandbox's own loopback.
work="$dir/agent-work" fakehome="$dir/agent-home"
mkdir -p "$work" "$fakehome/.ssh"
echo "FAKE PRIVATE KEY" > "$fakehome/.ssh/id_rsa"
cat > "$work/agent.py" <<'PY'
import os, socket
open("report.txt", "w").write("3 files checked\n")
tries = [
    ("write /etc/agent-was-here", lambda: open("/etc/agent-was-here", "w").write("x") and "written, to the sandbox's overlay only"),
    ("read ~/.ssh/id_rsa", lambda: open(os.path.expanduser("~/.ssh/id_rsa")).read() or "(empty)"),
    ("the network interfaces", lambda: " ".join(name for _, name in socket.if_nameindex())),
]
for what, f in tries:
    try:
        print(what + ": " + f())
    except Exception as e:
        print(what + ": " + type(e).__name__ + ": " + str(e))
PY
echo '$ cd agent-work && moat sandbox -- python3 agent.py'
(cd "$work" && HOME="$fakehome" "$moat" sandbox -- python3 agent.py) || echo "(moat sandbox exited with $?)"
echo "landed in the directory: $(cat "$work/report.txt")"
if [ -e /etc/agent-was-here ]; then echo "HOST /etc CHANGED"; exit 1; fi
echo "the host is untouched: no /etc/agent-was-here"
