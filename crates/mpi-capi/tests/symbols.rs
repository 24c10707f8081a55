//! The header and the library agree: every MPI_/PMPI_ function declared in
//! include/mpi.h is exported by libmpi.so.12 and vice versa, MPI_ names are
//! weak and PMPI_ names strong, nothing is versioned; MPICH's exported
//! variables (MPI_UNWEIGHTED ...) exist; the header compiles cleanly as C99
//! and as C++; and scripts/check-abi finds every function and name of
//! MPICH 4.0's headers.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

fn header_functions() -> BTreeSet<String> {
    let h = std::fs::read_to_string(root().join("include/mpi.h")).expect("read mpi.h");
    let mut out = BTreeSet::new();
    for line in h.lines() {
        if let Some(rest) = line.strip_prefix("WANMPI_FN(") {
            let name = rest.split(',').nth(1).expect("WANMPI_FN(ret, name, params)").trim();
            out.insert(format!("MPI_{name}"));
            out.insert(format!("PMPI_{name}"));
        }
        // The tool interface's own macro (it has no Fortran binding).
        if let Some(rest) = line.strip_prefix("WANMPI_T_FN(") {
            let name = rest.split(',').next().expect("WANMPI_T_FN(name, params)").trim();
            out.insert(format!("MPI_T_{name}"));
            out.insert(format!("PMPI_T_{name}"));
        }
    }
    out.insert("MPIR_Dup_fn".into());
    out
}

#[test]
fn exported_symbols_match_the_header() {
    let lib = prefix().join("lib/libmpi.so.12");
    let out = Command::new("readelf").args(["--dyn-syms", "-W"]).arg(&lib).output().expect("readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut exported = BTreeSet::new();
    let mut variables = BTreeSet::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if f.len() < 8 || f[6] == "UND" {
            continue;
        }
        let name = f[7];
        if !(name.starts_with("MPI_") || name.starts_with("PMPI_") || name.starts_with("MPIR_")) {
            continue;
        }
        if f[3] == "OBJECT" {
            variables.insert(name.to_string());
            continue;
        }
        assert!(!name.contains('@'), "{name} is versioned");
        let weak = f[4] == "WEAK";
        assert_eq!(weak, name.starts_with("MPI_"), "{name}: binding {}", f[4]);
        exported.insert(name.to_string());
    }
    let declared = header_functions();
    let missing: Vec<_> = declared.difference(&exported).collect();
    let undeclared: Vec<_> = exported.difference(&declared).collect();
    assert!(missing.is_empty(), "declared in mpi.h but not exported: {missing:?}");
    assert!(undeclared.is_empty(), "exported but not in mpi.h: {undeclared:?}");
    assert!(declared.len() > 1100, "only {} functions", declared.len());
    let wanted: BTreeSet<String> =
        // MPI_T_PVAR_ALL_HANDLES: the tool interface's sentinel handle (docs/mpit.md).
        [
            "MPI_UNWEIGHTED",
            "MPI_WEIGHTS_EMPTY",
            "MPI_F_STATUS_IGNORE",
            "MPI_F_STATUSES_IGNORE",
            "MPI_F08_STATUS_IGNORE",
            "MPI_F08_STATUSES_IGNORE",
            "MPI_T_PVAR_ALL_HANDLES",
        ]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(variables, wanted, "exported variables");
}

#[test]
fn check_abi_finds_every_mpich_function_and_name() {
    let out = Command::new(root().join("scripts/check-abi")).arg(prefix()).output().expect("run scripts/check-abi");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/check-abi failed:\n{text}");
    assert!(text.contains(", 0 missing from") && text.contains(", 0 do not compile"), "{text}");
}

#[test]
fn soname_is_libmpi_so_12_with_mpich_name() {
    let lib = prefix().join("lib");
    let out = Command::new("readelf").arg("-d").arg(lib.join("libmpi.so.12")).output().expect("readelf");
    assert!(String::from_utf8_lossy(&out.stdout).contains("[libmpi.so.12]"));
    assert!(lib.join("libmpich.so.12").exists());
}

#[test]
fn header_compiles_strictly_as_c99_and_cxx() {
    let dir = out_dir("header");
    let src = dir.join("h.c");
    std::fs::write(&src, "#include <mpi.h>\nint main(void) { MPI_Status s; (void)s; return MPI_SUCCESS; }\n").expect("write");
    let cxx = dir.join("h.cpp");
    std::fs::copy(&src, &cxx).expect("copy");
    let inc = format!("-I{}", root().join("include").display());
    for (cc, file, std) in [("cc", &src, "-std=c99"), ("c++", &cxx, "-std=c++11")] {
        let out = Command::new(cc)
            .args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", &inc, "-c", "-o", "/dev/null"])
            .arg(file)
            .output()
            .expect("compiler");
        assert!(out.status.success(), "{cc}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
