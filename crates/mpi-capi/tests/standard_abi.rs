//! The MPI standard ABI (MPI 5.0, ABI version 1.0): programs compiled with
//! our `mpicc_abi` against our `mpi_abi.h` run on `libmpi_abi.so.1`
//! (abi/install), the same core under a translator. The conformance
//! programs are those `c_conformance.rs` runs against `mpi.h` and
//! `ompi_abi.rs` builds with Open MPI's header, so the same program checks
//! the same results whichever ABI it was built for.

mod common;

use common::*;
use std::process::Command;

fn compile_abi(name: &str, tag: &str) -> std::path::PathBuf {
    compile_for(&prefix().join("bin/mpicc_abi"), name, tag, "libmpi_abi.so.1")
}

fn transport(t: &str) -> Vec<(&'static str, String)> {
    vec![("WANMPI_TRANSPORT", t.to_string())]
}

#[test]
fn conformance_programs_pass_on_the_standard_abi() {
    let programs: &[(&str, &[usize])] = &[
        ("p2p", &[2]),
        ("requests", &[2]),
        ("coll", &[1, 3, 4]),
        ("comm_err", &[1, 2, 4]),
        ("nbc", &[1, 3]),
        ("neighbor", &[1, 4]),
        ("intercoll", &[2, 3]),
        ("idup", &[2, 3]),
        ("userop", &[1, 3]),
        ("mpich_edges", &[1, 4]),
        ("attr", &[1, 2]),
        ("rma", &[1, 3]),
        ("threads", &[2]),
        ("io", &[2]),
        ("io_datarep", &[1, 2]),
        ("large_count", &[1, 2]),
        ("mpi4", &[1, 3]),
    ];
    for (name, ranks) in programs {
        let exe = compile_abi(name, "abi");
        for &n in *ranks {
            assert_pass(&run(n, &exe, &[], &transport("auto")), name, n);
        }
    }
}

#[test]
fn standard_abi_programs_pass_on_every_transport() {
    pass_on_every_transport("standard ABI", |name| compile_abi(name, "abi-transports"), transport);
}

/// What only the standard ABI has: its version and the sizes of its
/// integer types, and the handle constants a program compiled against it
/// carries (small integers, the standard's).
#[test]
fn abi_version_info_and_handle_values() {
    let src = out_dir("abi-info").join("info.c");
    std::fs::write(
        &src,
        r#"#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    int major = -1, minor = -1, flag = 0, rank = -1;
    char v[MPI_MAX_INFO_VAL];
    MPI_Info info;
    if (MPI_Abi_get_version(&major, &minor) != MPI_SUCCESS) return 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Abi_get_info(&info);
    MPI_Info_get_string(info, "mpi_count_size", &(int){sizeof v}, v, &flag);
    MPI_Info_free(&info);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int cmp = -1;
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    int provided = -1;
    MPI_Query_thread(&provided);
    printf("abi %d.%d count_size %s world 0x%lx int 0x%lx congruent %d thread_ok %d dup_is_pointer %d\n",
           major, minor, flag ? v : "?", (unsigned long)(uintptr_t)MPI_COMM_WORLD,
           (unsigned long)(uintptr_t)MPI_INT, cmp == MPI_CONGRUENT,
           provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED || provided == MPI_THREAD_SERIALIZED ||
               provided == MPI_THREAD_MULTIPLE,
           (uintptr_t)dup >= 0x1000);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
"#,
    )
    .expect("write info.c");
    let exe = out_dir("abi-info").join("info");
    let out = Command::new(prefix().join("bin/mpicc_abi")).arg("-o").arg(&exe).arg(&src).output().expect("mpicc_abi");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(1, &exe, &[], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("abi 1.0 count_size 8 world 0x101 int 0x209 congruent 1 thread_ok 1 dup_is_pointer 1"), "{stdout}");
}

#[test]
fn the_library_exports_only_mpi_names() {
    let lib = prefix().join("lib/libmpi_abi.so.1");
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("nm");
    let syms = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = syms.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    assert!(names.contains(&"MPI_Abi_get_version") && names.contains(&"PMPI_Send") && names.contains(&"MPI_Send"));
    let stray: Vec<&&str> = names.iter().filter(|n| !n.starts_with("MPI_") && !n.starts_with("PMPI_")).collect();
    assert!(stray.is_empty(), "libmpi_abi.so.1 exports more than MPI names: {stray:?}");
}
