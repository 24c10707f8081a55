//! The Fortran bindings (fortran/, docs/fortran.md): programs written with
//! mpif.h (fixed form), `use mpi` and `use mpi_f08` (tests/fortran), built
//! with wanmpi's mpifort and run under wanmpi's mpirun over every transport.
//! Each checks its own results (point-to-point with wildcards and status
//! fields, collectives with MPI_IN_PLACE, user reductions and callbacks
//! written in Fortran, derived types, MPI_BOTTOM, strings, LOGICAL) and
//! prints PASS <name> on rank 0.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;

const TRANSPORTS: &[(&str, &str)] = &[("auto", "10"), ("tcp", "10"), ("sctp", "10"), ("sctp", "1"), ("wamp", "10"), ("adaptive", "10")];

/// Compiles `tests/fortran/<files>` (Fortran, and C beside it) into one
/// program with the installed mpifort; module files the program defines go
/// to its own directory.
fn mpifort(files: &[&str], name: &str) -> PathBuf {
    let dir = out_dir("mpifort").join(name);
    std::fs::create_dir_all(&dir).expect("create the module directory");
    let exe = dir.join(name);
    let srcs = files.iter().map(|f| root().join("tests/fortran").join(f));
    let wrapper = prefix().join("bin/mpifort");
    assert!(wrapper.exists(), "{} missing: is gfortran installed (scripts/install-deps)?", wrapper.display());
    let out = Command::new(&wrapper).args(["-O1", "-w", "-J"]).arg(&dir).arg("-o").arg(&exe).args(srcs).output().expect("run mpifort");
    assert!(out.status.success(), "mpifort {files:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn suite(file: &str, name: &str, ranks: &[usize]) {
    suite_of(&[file], name, ranks);
}

/// Runs the program made of `files` on each of `ranks` over every transport.
fn suite_of(files: &[&str], name: &str, ranks: &[usize]) {
    let exe = mpifort(files, name);
    for (transport, streams) in TRANSPORTS {
        let env = [("WANMPI_TRANSPORT", transport.to_string()), ("WANMPI_SCTP_STREAMS", streams.to_string())];
        for &n in ranks {
            assert_pass(&run(n, &exe, &[], &env), name, n);
            eprintln!("{name}: {n} ranks over {transport} ({streams} streams): passed");
        }
    }
}

#[test]
fn mpif_h_fixed_form() {
    suite("f77.f", "f77", &[1, 2, 3]);
}

#[test]
fn use_mpi() {
    suite("usempi.f90", "usempi", &[1, 2, 3]);
}

#[test]
fn use_mpi_f08() {
    suite("usempi_f08.f90", "usempi_f08", &[1, 2, 4]);
}

/// Profiling wrappers written in Fortran: the program's own MPI_SEND
/// (mpif.h, `use mpi`) or MPI_Send_f08 (`use mpi_f08`) replaces the
/// library's weak one, counts its calls and reaches the library through
/// PMPI_SEND; each program checks its counts and the data moved.
#[test]
fn profiling_wrappers() {
    suite("profile77.f", "profile77", &[1, 2, 3]);
    suite("profile.f90", "profile", &[1, 2, 3]);
    suite("profile_f08.f90", "profile_f08", &[1, 2, 3]);
}

/// The same wrappers compiled with Debian's MPICH (`mpifort.mpich`, its
/// mpif.h and `use mpi`) run on wanmpi's Fortran library, found as
/// libmpichfort.so.12 through LD_LIBRARY_PATH: the program's `mpi_send_`
/// replaces the library's and its `pmpi_send_` reaches wanmpi.
#[test]
fn mpich_built_profiling_wrappers_run_on_our_library() {
    let lib = prefix().join("lib").display().to_string();
    for (file, name) in [("profile77.f", "profile77"), ("profile.f90", "profile")] {
        let dir = out_dir("mpifort-mpich").join(name);
        std::fs::create_dir_all(&dir).expect("create the program's directory");
        let exe = dir.join(name);
        let out = Command::new("mpifort.mpich")
            .args(["-O1", "-w", "-J"])
            .arg(&dir)
            .arg("-o")
            .arg(&exe)
            .arg(root().join("tests/fortran").join(file))
            .output()
            .expect("run mpifort.mpich (Debian packages mpich, libmpich-dev)");
        assert!(out.status.success(), "mpifort.mpich {file} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let needed = Command::new("readelf").arg("-d").arg(&exe).output().expect("readelf");
        assert!(String::from_utf8_lossy(&needed.stdout).contains("libmpichfort.so.12"), "{name} was not linked against MPICH");
        for (transport, streams) in TRANSPORTS {
            let env = [("LD_LIBRARY_PATH", lib.clone()), ("WANMPI_TRANSPORT", transport.to_string()), ("WANMPI_SCTP_STREAMS", streams.to_string())];
            for n in [2, 3] {
                assert_pass(&run(n, &exe, &[], &env), name, n);
            }
        }
    }
}

/// Attributes across languages: a value Fortran sets is read in C as a
/// pointer to it (also on a duplicate, through a Fortran copy callback), a
/// pointer C sets is read in Fortran as its value.
#[test]
fn attributes_across_languages() {
    suite_of(&["attrlang.f90", "attrlang_c.c"], "attrlang", &[1, 2]);
}

/// mpi_f08's INTEGER(KIND=MPI_COUNT_KIND) overloads reach the `_c` forms
/// (a type of 2**32 + 5 bytes, messages and collectives checked for content).
#[test]
fn mpi_f08_large_counts() {
    suite("largecount_f08.f90", "largecount_f08", &[1, 2, 4]);
}

/// mpifort -show names the compiler, the module path and both libraries;
/// mpif90 and mpif77 are the same wrapper.
#[test]
fn wrapper_show() {
    for w in ["mpifort", "mpif90", "mpif77"] {
        let out = Command::new(prefix().join("bin").join(w)).args(["-show", "x.f90"]).output().expect("run the wrapper");
        let line = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{w} -show failed");
        let inc = format!("-I{}", prefix().join("include").display());
        for part in [inc.as_str(), "-lmpifort", "-lmpi", "x.f90"] {
            assert!(line.contains(part), "{w} -show lacks {part}: {line}");
        }
    }
}

/// The exported names of a shared library (`nm -D --defined-only`), each
/// with its symbol type (`T` defined, `W` weak).
fn exported_kinds(lib: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output().expect("run nm");
    assert!(out.status.success(), "nm {} failed", lib.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let kind = f.nth(1)?.to_owned();
            Some((f.next()?.to_owned(), kind))
        })
        .collect()
}

/// The exported names of a shared library.
fn exported(lib: &std::path::Path) -> std::collections::BTreeSet<String> {
    exported_kinds(lib).into_keys().collect()
}

/// Every MPI function of libmpi.so has gfortran's symbol in libmpifort.so,
/// but the large-count `_c` forms (Fortran reaches them through mpi_f08
/// overloads, which we do not have), C's handle and status conversions and
/// the tool interface (MPI_T has no Fortran binding in the standard).
/// Functions are the names with a lower-case letter (not the exported
/// constants such as MPI_F_STATUS_IGNORE).
#[test]
fn every_mpi_function_has_a_fortran_symbol() {
    let c = exported(&prefix().join("lib/libmpi.so.12"));
    let f = exported(&prefix().join("lib/libmpifort.so.12"));
    let c_only = |n: &str| {
        n.ends_with("_c") || n.ends_with("_c2f") || n.ends_with("_f2c") || n.contains("c2f08") || n.contains("f082c") || n.starts_with("MPI_T_")
    };
    let missing: Vec<String> = c
        .iter()
        .filter(|n| n.starts_with("MPI_") && n[4..].bytes().any(|b| b.is_ascii_lowercase()) && !c_only(n))
        .map(|n| format!("{}_", n.to_lowercase()))
        .filter(|n| !f.contains(n))
        .collect();
    assert!(missing.is_empty(), "no Fortran symbol for: {missing:?}");
    assert!(f.contains("mpi_send_") && f.contains("pmpi_send_") && f.contains("MPI_SEND") && f.contains("mpi_send__"));
}

/// The profiling names are the library's own symbols and the MPI names weak
/// ones (as MPICH's), for generated and hand-written glue alike, and
/// mpi_f08's specific procedures (standard and large count) have both.
#[test]
fn mpi_names_are_weak_and_pmpi_names_strong() {
    let f = exported_kinds(&prefix().join("lib/libmpifort.so.12"));
    for stem in ["mpi_send", "mpi_init", "mpi_comm_get_attr", "mpi_wtime", "mpi_send_c"] {
        let upper = stem.to_uppercase();
        for (name, kind) in [
            (format!("{stem}_"), "W"),
            (format!("{stem}__"), "W"),
            (upper.clone(), "W"),
            (format!("{stem}_f08_"), "W"),
            (format!("p{stem}_"), "T"),
            (format!("p{stem}__"), "T"),
            (format!("P{upper}"), "T"),
            (format!("p{stem}_f08_"), "T"),
        ] {
            assert_eq!(f.get(&name).map(String::as_str), Some(kind), "{name} in libmpifort.so");
        }
    }
}
