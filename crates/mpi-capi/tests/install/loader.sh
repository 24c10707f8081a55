#!/bin/sh
# Run by tests/install.rs inside scripts/sandbox-root (a private /etc):
# the loader entry of wanmpi-system serves libmpi.so.12 to programs built
# with only -I, -L and -l, and leaves Debian's MPICH and Open MPI binaries
# on their own libraries; unregistering takes it back.
# Usage: loader.sh PREFIX DIR   (DIR holds plain, mpich and ompi, built by
# the test: hello.c linked without a run path, with mpicc.mpich and with
# mpicc.openmpi)
set -u
prefix=$1
dir=$2
unset LD_LIBRARY_PATH
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# The library the loader gives BINARY for SONAME ("not found" when none).
resolves() { ldd "$1" | awk -v so="$2" '$1 == so { print $3 == "not" ? "not found" : $3 }'; }

[ "$(resolves "$dir/plain" libmpi.so.12)" = "not found" ] || fail "libmpi.so.12 found before registering: $(resolves "$dir/plain" libmpi.so.12)"
"$prefix/bin/wanmpi-system" register-loader || fail "wanmpi-system register-loader"
got=$(resolves "$dir/plain" libmpi.so.12)
[ "$(readlink -f "$got")" = "$(readlink -f "$prefix/lib/libmpi.so.12")" ] || fail "plain: libmpi.so.12 => $got"
got=$(resolves "$dir/mpich" libmpich.so.12)
case $(readlink -f "$got") in "$(readlink -f "$prefix")"/*|"") fail "mpich: libmpich.so.12 => $got (hijacked or missing)" ;; esac
got=$(resolves "$dir/ompi" libmpi.so.40)
case $(readlink -f "$got") in "$(readlink -f "$prefix")"/*|"") fail "ompi: libmpi.so.40 => $got" ;; esac
out=$("$prefix/bin/mpirun" -n 2 --timeout 60 "$dir/plain" 2>&1) || fail "plain on 2 ranks: $out"
case $out in *"sum of ranks = 1 (expected 1)"*) ;; *) fail "plain printed: $out" ;; esac
"$prefix/bin/wanmpi-system" status | grep -q "names $prefix/lib/ld.so.d" || fail "status: $("$prefix/bin/wanmpi-system" status)"
"$prefix/bin/wanmpi-system" unregister-loader || fail "wanmpi-system unregister-loader"
[ "$(resolves "$dir/plain" libmpi.so.12)" = "not found" ] || fail "libmpi.so.12 still found after unregistering"
[ ! -e /etc/ld.so.conf.d/wanmpi.conf ] || fail "wanmpi.conf left behind"
[ $fails -eq 0 ] && echo "PASS loader"
