#!/bin/sh
# Run by tests/install.rs inside scripts/sandbox-root (private /etc, /usr,
# /var and /opt): the .deb of scripts/package-deb installs under
# /opt/wanmpi, registers the loader entry and the alternatives without
# switching anything, lets the user make wanmpi the system's MPI and back,
# and leaves nothing when removed.
# Usage: deb.sh DEB SRC WORK   (SRC: hello.c; WORK: a scratch directory)
set -u
deb=$1
src=$2
work=$3
opt=/opt/wanmpi
unset LD_LIBRARY_PATH
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
value() { update-alternatives --query "$1" | sed -n 's/^Value: //p'; }
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

before_mpi=$(value mpi)
before_mpirun=$(value mpirun)
dpkg -i "$deb" >"$work/dpkg-i.log" 2>&1 || fail "dpkg -i: $(cat "$work/dpkg-i.log")"
[ -x $opt/bin/mpicc ] && [ -e $opt/lib/libmpi.so.12 ] || fail "nothing in $opt"
grep -qx "$opt/lib/ld.so.d" /etc/ld.so.conf.d/wanmpi.conf || fail "no loader entry"
ldconfig -p | grep -q "libmpi.so.12 .*=> $opt/lib/ld.so.d/libmpi.so.12" || fail "ldconfig does not know libmpi.so.12"
ldconfig -p | grep -q "libmpich.so.12 .*=> $opt" && fail "the loader gives MPICH's libmpich.so.12 from $opt"
for g in mpi mpirun "mpi-$multiarch"; do
    update-alternatives --query "$g" | grep -q "^Alternative: $opt/" || fail "alternative $g not registered"
done
update-alternatives --query mpi | grep -A1 "^Alternative: $opt/bin/mpicc" | grep -qx "Priority: 10" || fail "mpi: priority is not 10"
# Registered but not chosen: the machine's MPI is the one it was.
[ "$(value mpi)" = "$before_mpi" ] || fail "installing switched mpi to $(value mpi)"
[ "$(value mpirun)" = "$before_mpirun" ] || fail "installing switched mpirun to $(value mpirun)"

# The user chooses wanmpi.
update-alternatives --quiet --set mpi $opt/bin/mpicc
update-alternatives --quiet --set mpirun $opt/bin/mpirun
update-alternatives --quiet --set "mpi-$multiarch" $opt/include
[ "$(readlink -f /usr/bin/mpicc)" = $opt/bin/mpicc ] || fail "/usr/bin/mpicc is $(readlink -f /usr/bin/mpicc)"
[ "$(readlink -f /usr/bin/mpiexec)" = "$(readlink -f $opt/bin/mpiexec)" ] || fail "/usr/bin/mpiexec is $(readlink -f /usr/bin/mpiexec)"
mpicc -o "$work/hello" "$src" || fail "mpicc"
out=$(mpirun -n 3 --timeout 60 "$work/hello" 2>&1) || fail "mpirun: $out"
case $out in *"sum of ranks = 3 (expected 3)"*) ;; *) fail "hello printed: $out" ;; esac
# pkg-config's default path now finds wanmpi as "mpi"; a program built
# with only its -I, -L and -l runs through the loader entry.
[ "$(pkg-config --modversion mpi)" = 4.0.2 ] || fail "pkg-config mpi: $(pkg-config --modversion mpi 2>&1)"
flags=$(pkg-config --cflags --libs mpi | tr ' ' '\n' | grep -E '^-(I|L|l)' | tr '\n' ' ')
# shellcheck disable=SC2086
cc -o "$work/plain" "$src" $flags || fail "cc $flags"
readelf -d "$work/plain" | grep -qE 'RPATH|RUNPATH' && fail "plain has a run path"
out=$(mpirun -n 2 --timeout 60 "$work/plain" 2>&1) || fail "plain: $out"
case $out in *"sum of ranks = 1 (expected 1)"*) ;; *) fail "plain printed: $out" ;; esac
# ... and back.
update-alternatives --quiet --auto mpi
update-alternatives --quiet --auto mpirun
update-alternatives --quiet --auto "mpi-$multiarch"
[ "$(value mpi)" = "$before_mpi" ] || fail "--auto mpi gave $(value mpi)"

dpkg -r wanmpi >"$work/dpkg-r.log" 2>&1 || fail "dpkg -r: $(cat "$work/dpkg-r.log")"
[ ! -e $opt ] || fail "$opt left behind: $(find $opt | head)"
[ ! -e /etc/ld.so.conf.d/wanmpi.conf ] || fail "wanmpi.conf left behind"
ldconfig -p | grep -q "$opt" && fail "the loader still names $opt"
for g in mpi mpirun "mpi-$multiarch"; do
    update-alternatives --query "$g" 2>/dev/null | grep -q "$opt" && fail "alternative $g still names $opt"
done
[ "$(value mpi)" = "$before_mpi" ] || fail "after removal mpi is $(value mpi)"
[ $fails -eq 0 ] && echo "PASS deb"
