//! The conformance programs over the default transport per peer on a real
//! emulated WAN: 2 sites x 2 hosts x 2 ranks (`mpirun --emulate-sites
//! 2x2x2`), so one job runs shared memory between the two ranks of a host,
//! tcp between the hosts of a site and wamp between the sites, each host in
//! its own network namespace. Needs root (namespaces, TUN) and the
//! emulator's forwarder; says why and skips without them.

mod harness;
use harness::{bin_dir, mpirun};
use std::process::Command;

fn ready(test: &str) -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        eprintln!("SKIPPED {test}: needs root to create network namespaces");
        return false;
    }
    if !bin_dir().join("wanmpi-emu").is_file() {
        eprintln!("SKIPPED {test}: build the emulator's forwarder first (cargo build -p wanmpi-emulator, same profile)");
        return false;
    }
    true
}

fn pass_on_sites(prog: &str, name: &str) {
    let out = Command::new(mpirun())
        .args(["-n", "8", "--timeout", "180", "--emulate", "delay=3ms", "--emulate-sites", "2x2x2", "--emulate-lan", "delay=100us"])
        .args(["--wan-transport", "wamp", "-x", "WANMPI_STATS=1", prog])
        .output()
        .expect("mpirun starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("PASS {name} on 8 ranks")),
        "{name} over emulated sites failed with {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // Each kind of part carried frames: shm inside a host, tcp inside a
    // site, wamp between sites.
    for why in ["now shm because same host", "now tcp because same site", "now wamp because another site"] {
        assert!(stderr.contains(why), "no peer went {why:?}:\n{stderr}");
    }
}

#[test]
fn conformance_over_shared_memory_lan_and_wan_in_one_job() {
    if !ready("conformance_over_shared_memory_lan_and_wan_in_one_job") {
        return;
    }
    pass_on_sites(env!("CARGO_BIN_EXE_order"), "order");
    pass_on_sites(env!("CARGO_BIN_EXE_unexpected"), "unexpected");
    pass_on_sites(env!("CARGO_BIN_EXE_probe"), "probe");
    pass_on_sites(env!("CARGO_BIN_EXE_collectives"), "collectives");
    pass_on_sites(env!("CARGO_BIN_EXE_comms"), "comms");
}
