//! rsmpi, the Rust MPI binding (crate `mpi` 0.8.2 from crates.io), built as
//! a user would against an installed wanmpi (`scripts/rsmpi-examples`:
//! through our `mpicc`, and through `MPI_PKG_CONFIG` and our `mpich.pc`),
//! and its examples run under our mpirun on shared memory, tcp and wamp on
//! 2 to 8 ranks with no `LD_LIBRARY_PATH`: rsmpi keeps only `-I`, `-L` and
//! `-l`, so its programs load libmpi.so.12 through wanmpi-system's loader
//! entry, registered inside `scripts/sandbox-root` (the machine's loader
//! never sees it; `tests/install/rsmpi.sh`). Not root: the builds run, the
//! runs say they were skipped.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use common::*;

/// Examples that fail through a bug of rsmpi's own, with the reason.
const RSMPI_BUGS: &[(&str, &str)] = &[(
    "comm_name",
    "Communicator::get_name reads the name through a pointer into a copy of its buffer that is already gone \
     (buf.assume_init().as_ptr()): a panic inside a panic, on MPICH too",
)];

const TRANSPORTS: [&str; 3] = ["shm", "tcp", "wamp"];

/// The scripts share target/rsmpi: one at a time.
static BUILD: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn out() -> PathBuf {
    root().join("target/rsmpi")
}

fn build(args: &[&str]) {
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(root().join("scripts/rsmpi-examples")).args(args).arg(prefix()).arg(out()).output().expect("run scripts/rsmpi-examples");
    assert!(out.status.success(), "scripts/rsmpi-examples {args:?} failed:\n{}", text(&out));
}

/// Runs the examples named in `list` from `dir` on `transports` inside the
/// sandbox; None when it cannot be made. Results by (example, transport).
fn run_examples(dir: &Path, list: &Path, transports: &[&str]) -> Option<BTreeMap<(String, String), (u32, bool)>> {
    if !is_root() {
        eprintln!("skipped running rsmpi's examples: the loader entry needs root (inside a private mount namespace)");
        return None;
    }
    let out = Command::new(root().join("scripts/sandbox-root"))
        .arg(root().join("crates/mpi-capi/tests/install/rsmpi.sh"))
        .arg(prefix())
        .arg(dir)
        .arg(list)
        .args(transports)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run scripts/sandbox-root");
    if out.status.code() == Some(77) {
        eprintln!("skipped running rsmpi's examples: {}", text(&out).trim());
        return None;
    }
    let t = text(&out);
    assert!(out.status.success() && t.lines().any(|l| l == "DONE"), "rsmpi.sh ({}):\n{t}", out.status);
    let mut results = BTreeMap::new();
    for l in t.lines() {
        if let Some(["RESULT", name, transport, n, verdict]) = l.split_whitespace().collect::<Vec<_>>().get(..) {
            results.insert((name.to_string(), transport.to_string()), (n.parse().unwrap_or(0), *verdict == "ok"));
        }
    }
    eprintln!("{t}");
    Some(results)
}

#[test]
fn rsmpi_examples_run_without_ld_library_path_on_shm_tcp_and_wamp() {
    build(&[]);
    let list = out().join("examples.txt");
    let names: Vec<String> = std::fs::read_to_string(&list).expect("examples.txt").lines().map(str::to_string).collect();
    assert!(names.len() >= 50, "rsmpi 0.8.2 has 58 examples, found {}", names.len());
    let Some(results) = run_examples(&out().join("target/release/examples"), &list, &TRANSPORTS) else { return };
    let mut unexpected = Vec::new();
    for transport in TRANSPORTS {
        let mut passed = 0;
        for name in &names {
            let Some(&(n, ok)) = results.get(&(name.clone(), transport.to_string())) else {
                unexpected.push(format!("{name} on {transport}: no result"));
                continue;
            };
            passed += ok as usize;
            let known = RSMPI_BUGS.iter().find(|(bug, _)| bug == name);
            match (ok, known) {
                (false, None) => unexpected.push(format!("{name} on {transport}, {n} ranks: failed")),
                (false, Some((_, why))) => eprintln!("{name} on {transport}: fails as expected ({why})"),
                (true, _) => {}
            }
        }
        eprintln!("rsmpi examples on {transport}: {passed} of {} passed", names.len());
    }
    assert!(unexpected.is_empty(), "rsmpi examples (see the output above):\n{}", unexpected.join("\n"));
}

#[test]
fn rsmpi_finds_us_through_mpi_pkg_config() {
    build(&[]);
    build(&["--pkg-config"]);
    let dir = out().join("target-pkg-config/release/examples");
    let list = out().join("pkg-config-examples.txt");
    std::fs::write(&list, "simple\n").expect("write list");
    let Some(results) = run_examples(&dir, &list, &["tcp"]) else { return };
    assert_eq!(results.get(&("simple".to_string(), "tcp".to_string())).map(|r| r.1), Some(true), "{results:?}");
}
