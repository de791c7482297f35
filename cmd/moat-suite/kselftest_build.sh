#!/bin/bash
# kselftest_build.sh DIR builds the kernel selftests moat-suite runs (the
# kselftest suite) in DIR, where apt-get download has left Debian 12's
# linux-source-6.1, libcap-dev, libcap-ng-dev and libcap-ng0 packages
# (DIR/debs). It extracts tools/ of the source, and builds each family in
# its own directory of tools/testing/selftests, where the tests expect
# their helpers and data, with the host's gcc and libc6-dev (Debian 12's,
# as the suite rootfs's libc is) against the installed linux-libc-dev
# headers (KHDR_INCLUDES: no `make headers`, which needs the whole tree).
# The binaries are dynamic: the suite rootfs has the libraries they load
# (libc, libcap2, libcap-ng0, libasan8 and libubsan1 for openat2's).
# make -k: a family builds what it can; a program that did not build is
# not run (moat-suite's list says which are left out and why).
set -euo pipefail
dir=$1
cd "$dir"
sysroot=$dir/sysroot
rm -rf sysroot linux-source-6.1 shim
mkdir -p sysroot shim
for deb in debs/libcap-dev_*.deb debs/libcap-ng-dev_*.deb debs/libcap-ng0_*.deb; do
	dpkg-deb -x "$deb" sysroot
done
dpkg-deb --fsys-tarfile debs/linux-source-6.1_*.deb |
	tar -xO ./usr/src/linux-source-6.1.tar.xz | xz -dc |
	tar -x --wildcards 'linux-source-6.1/tools/*' 'linux-source-6.1/Makefile' \
		'linux-source-6.1/scripts/subarch.include' 'linux-source-6.1/arch/x86/include/asm/*'

# The machine has no rsync, which some families' Makefiles copy their
# scripts with (rsync -a SRC... DEST); cp does that here.
cat >shim/rsync <<'EOF'
#!/bin/sh
files=
for a in "$@"; do case $a in -*) ;; *) files="$files $a" ;; esac; done
exec cp -rL --preserve=mode,timestamps $files
EOF
chmod +x shim/rsync
export PATH=$dir/shim:$PATH

cd linux-source-6.1/tools/testing/selftests
cc="gcc -isystem $sysroot/usr/include -L$sysroot/usr/lib/x86_64-linux-gnu -L$sysroot/lib/x86_64-linux-gnu"
mk() {
	make -k -j2 KHDR_INCLUDES="-isystem $sysroot/usr/include" CC="$cc" "$@" || true
}
for family in capabilities clone3 core exec filesystems futex ipc kcmp landlock membarrier memfd \
	mincore mount mount_setattr move_mount_set_group nsfs openat2 pid_namespace pidfd prctl proc \
	ptrace rlimits rseq seccomp sigaltstack size splice sync syscall_user_dispatch timens timers \
	tmpfs vDSO x86; do
	echo "== $family"
	mk -C "$family"
done
# mqueue: mq_perf_tests, a benchmark, wants libpopt, which every program's
# link line names.
mk -C mqueue LDLIBS="-lrt -lpthread" "$PWD/mqueue/mq_open_tests"
# net: only its plain socket programs (the rest want netdevsim, bpf,
# veth pairs or addresses beyond loopback).
mk -C net "$PWD/net/socket" "$PWD/net/reuseport_dualstack" "$PWD/net/reuseaddr_conflict" \
	"$PWD/net/reuseaddr_ports_exhausted" "$PWD/net/sk_bind_sendto_listen" \
	"$PWD/net/sk_connect_zero_addr" "$PWD/net/so_netns_cookie" "$PWD/net/tcp_inq" "$PWD/net/tls"
mk -C net/af_unix
# vm: 6.1's Makefile cannot be driven without its 32-bit builds, so the
# quick user-space programs are built as its rule builds them.
cd vm
for p in mremap_test mremap_dontunmap map_fixed_noreplace map_populate mlock2-tests madv_populate mrelease_test; do
	extra=
	if grep -q vm_util "$p.c"; then extra=vm_util.c; fi
	gcc -Wall -I ../../../.. "$p.c" $extra -lrt -lpthread -o "$p" || true
done
