#!/bin/sh
# Run by tests/rsmpi.rs inside scripts/sandbox-root (a private /etc): with
# wanmpi-system's loader entry and no LD_LIBRARY_PATH, runs each of rsmpi's
# examples under wanmpi's mpirun on every transport given, on 2 to 8 ranks
# (a different count per example and transport: (index + transport) % 7 + 2).
# Prints one line per run: "RESULT <example> <transport> <ranks> ok|failed"
# (the output of a failed run before it), then "DONE".
# Usage: rsmpi.sh PREFIX EXAMPLES_DIR LIST TRANSPORT...
#   LIST: a file with one example name a line
set -u
prefix=$1
dir=$2
list=$3
shift 3
unset LD_LIBRARY_PATH
"$prefix/bin/wanmpi-system" register-loader || { echo "FAIL register-loader"; exit 1; }
t=0
for transport in "$@"; do
    i=0
    while read -r name; do
        n=$(( (i + t) % 7 + 2 ))
        i=$((i + 1))
        if out=$("$prefix/bin/mpirun" -n $n --transport "$transport" --timeout 60 "$dir/$name" 2>&1 </dev/null); then
            echo "RESULT $name $transport $n ok"
        else
            printf '%s\n' "$out" | tail -n 15 | sed 's/^/  | /'
            echo "RESULT $name $transport $n failed"
        fi
    done <"$list"
    t=$((t + 1))
done
echo DONE
