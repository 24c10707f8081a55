//! Open MPI's ABI: programs compiled with Debian's Open MPI (`mpicc.openmpi`,
//! package libopenmpi-dev) and never recompiled run on wanmpi's
//! libmpi.so.40 (abi/install) under wanmpi's mpirun, through
//! LD_LIBRARY_PATH; so do NetPIPE's prebuilt `NPopenmpi` (package
//! netpipe-openmpi) and Debian's python3-mpi4py, which is built for Open MPI.
//! The conformance programs are the ones `c_conformance.rs` runs against
//! our own header, so a program built for either ABI checks the same rules.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn lib_env(transport: &str) -> Vec<(&'static str, String)> {
    vec![("LD_LIBRARY_PATH", prefix().join("lib").display().to_string()), ("WANMPI_TRANSPORT", transport.to_string())]
}

fn compile_ompi(name: &str, tag: &str) -> std::path::PathBuf {
    compile_for(Path::new("mpicc.openmpi"), name, tag, "libmpi.so.40")
}

fn library_built() -> bool {
    prefix().join("lib/libmpi.so.40").exists()
}

#[test]
fn open_mpi_compiled_conformance_programs_pass() {
    assert!(library_built(), "libmpi.so.40 was not built (abi/install needs Open MPI's mpi.h: libopenmpi-dev)");
    // Programs of MPI 3.1, the version of Open MPI 4.1's header (the
    // MPI-4 ones do not compile against it).
    let programs: &[(&str, &[usize])] = &[
        ("p2p", &[2]),
        ("requests", &[2]),
        ("coll", &[1, 3, 4]),
        ("comm_err", &[1, 2, 4]),
        ("idup", &[2, 3]),
        ("userop", &[1, 3]),
        ("attr", &[1, 2]),
        ("rma", &[1, 3]),
        ("threads", &[2]),
        ("io", &[2]),
    ];
    for (name, ranks) in programs {
        let exe = compile_ompi(name, "openmpi");
        for &n in *ranks {
            assert_pass(&run(n, &exe, &[], &lib_env("auto")), name, n);
        }
    }
}

#[test]
fn open_mpi_compiled_programs_pass_on_every_transport() {
    assert!(library_built(), "libmpi.so.40 was not built");
    pass_on_every_transport("Open MPI ABI", |name| compile_ompi(name, "openmpi-transports"), lib_env);
}

/// An Open MPI binary across the WAN emulator: each rank in its own
/// network namespace, 10 ms apart, 1 % loss, MTU 1500, on the default
/// transport (wamp between hosts) and on tcp. Root only.
#[test]
fn open_mpi_compiled_program_runs_across_emulated_hosts() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/net/tun").exists() {
        eprintln!(
            "SKIPPED open_mpi_compiled_program_runs_across_emulated_hosts: needs root and /dev/net/tun (network namespaces for the WAN emulator)"
        );
        return;
    }
    assert!(library_built(), "libmpi.so.40 was not built");
    let exe = compile_ompi("p2p", "openmpi-emulated");
    let lib = prefix().join("lib").display().to_string();
    for transport in ["auto", "tcp"] {
        let out = Command::new(mpirun())
            .env("LD_LIBRARY_PATH", &lib)
            .args(["-x", "LD_LIBRARY_PATH", "-n", "2", "--timeout", "120", "--emulate", "delay=10ms,loss=1%"])
            .args(["--transport", transport])
            .arg(&exe)
            .output()
            .expect("run mpirun");
        assert_pass(&out, "p2p", 2);
        eprintln!("p2p (Open MPI ABI): 2 emulated hosts over {transport}: passed");
    }
}

#[test]
fn netpipe_open_mpi_binary_runs() {
    let np = Path::new("/usr/bin/NPopenmpi");
    assert!(np.exists(), "NPopenmpi not found: install the Debian package netpipe-openmpi");
    let out_file = out_dir("netpipe-openmpi").join("np.out");
    let out = run(2, np, &["-u", "262144", "-n", "20", "-o", &out_file.display().to_string()], &lib_env("auto"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "NPopenmpi failed:\n{text}");
    let rows = text.lines().filter(|l| l.contains("Mbps")).count();
    assert!(rows > 20 && text.contains("262144 bytes"), "NetPIPE results missing:\n{text}");
}

/// Debian's mpi4py (an Open MPI binary) on our library: what it reports
/// and what the standard's rules give, checked in Python on every rank.
const MPI4PY_CHECK: &str = r#"
from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
assert MPI.Get_library_version().startswith("wanmpi"), MPI.Get_library_version()
assert c.allreduce(r + 1) == n * (n + 1) // 2
assert c.bcast({"k": [1, 2]} if r == 0 else None) == {"k": [1, 2]}
st = MPI.Status()
if r == 0:
    got = sorted(c.recv(source=MPI.ANY_SOURCE, tag=5, status=st) for _ in range(n - 1))
    assert got == list(range(1, n)), got
    assert n == 1 or (1 <= st.Get_source() < n and st.Get_tag() == 5)
else:
    c.send(r, dest=0, tag=5)
assert c.sendrecv(r, dest=MPI.PROC_NULL, source=MPI.PROC_NULL, status=st) is None
assert st.Get_source() == MPI.PROC_NULL
buf = bytearray(4)
try:
    c.Sendrecv([b"abcdefgh", MPI.BYTE], dest=r, recvbuf=[buf, MPI.BYTE], source=r)
    raise SystemExit("a truncated receive did not fail")
except MPI.Exception as e:
    assert e.Get_error_class() == MPI.ERR_TRUNCATE, e.Get_error_string()
sub = c.Split(r % 2, r)
assert sub.Get_size() == (n + 1 - r % 2) // 2
sub.Free()
assert sub == MPI.COMM_NULL
print("PASS mpi4py rank", r)
"#;

#[test]
fn debian_mpi4py_runs_on_the_open_mpi_abi() {
    assert!(library_built(), "libmpi.so.40 was not built");
    let py = Path::new("/usr/bin/python3");
    let probe = Command::new(py).args(["-c", "import mpi4py"]).output().expect("python3");
    assert!(probe.status.success(), "Debian's python3-mpi4py is not installed (scripts/install-deps installs it)");
    for (n, transport) in [(1, "auto"), (3, "auto"), (2, "tcp"), (2, "wamp")] {
        let out = run(n, py, &["-c", MPI4PY_CHECK], &lib_env(transport));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.matches("PASS mpi4py").count() == n,
            "mpi4py on {n} ranks over {transport} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
