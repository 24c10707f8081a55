//! The MPICH ABI: programs compiled with Debian's MPICH (`mpicc.mpich`,
//! package libmpich-dev) and never recompiled run on wanmpi's libmpi.so.12
//! (found as libmpich.so.12 through LD_LIBRARY_PATH) under wanmpi's mpirun;
//! so does NetPIPE's prebuilt `NPmpich2` (package netpipe-mpich2), and so
//! do Debian's ScaLAPACK drivers (package scalapack-mpi-test,
//! `abi/scalapack.rs`) and its BLACS testers, Fortran main programs that
//! find wanmpi's Fortran library as libmpichfort.so.12 (`abi/blacs.rs`).

#[path = "abi/blacs.rs"]
mod blacs;
mod common;
#[path = "abi/scalapack.rs"]
mod scalapack;

use common::*;

fn lib_env() -> Vec<(&'static str, String)> {
    vec![("LD_LIBRARY_PATH", prefix().join("lib").display().to_string())]
}

#[test]
fn mpich_compiled_conformance_programs_pass() {
    let cc = std::path::Path::new("mpicc.mpich");
    for (name, n) in [("p2p", 2), ("requests", 2), ("coll", 3), ("comm_err", 4)] {
        let exe = compile(cc, name, "mpich");
        let needed = std::process::Command::new("readelf").arg("-d").arg(&exe).output().expect("readelf");
        assert!(String::from_utf8_lossy(&needed.stdout).contains("libmpich.so.12"), "{name} was not linked against MPICH");
        assert_pass(&run(n, &exe, &[], &lib_env()), name, n);
    }
}

#[test]
fn netpipe_mpich_binary_runs() {
    let np = which("NPmpich2").expect("NPmpich2 not found: install the Debian package netpipe-mpich2");
    let out_file = out_dir("netpipe").join("np.out");
    let out = run(2, &np, &["-u", "262144", "-n", "20", "-o", &out_file.display().to_string()], &lib_env());
    // NetPIPE reports progress on stderr.
    let stdout = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "NPmpich2 failed:\n{stdout}");
    // NetPIPE prints one line per size: "N: BYTES bytes REPS times --> MBPS Mbps in USEC usec".
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains("Mbps")).collect();
    assert!(rows.len() > 20, "too few NetPIPE results:\n{stdout}");
    assert!(rows.iter().any(|l| l.contains("262144 bytes")), "largest size missing:\n{stdout}");
    let data = std::fs::read_to_string(&out_file).expect("NetPIPE output file");
    let rates: Vec<f64> = data.lines().filter_map(|l| l.split_whitespace().nth(1)?.parse().ok()).collect();
    assert!(!rates.is_empty() && rates.iter().all(|r| *r > 0.0), "NetPIPE rates: {rates:?}");
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| std::path::Path::new(d).join(name)).find(|p| p.is_file())
}
