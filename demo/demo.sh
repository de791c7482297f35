#!/usr/bin/env bash
# demo.sh MOAT DIR: builds a small OCI bundle in DIR (Debian's static busybox
# and a static C program) and runs a few programs in moat sandboxes.
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
