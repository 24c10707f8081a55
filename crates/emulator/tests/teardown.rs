//! Teardown leaves nothing behind: after `down`, after the forwarder was
//! killed with SIGKILL, after a failed `up`, after a panicking user, and it
//! never removes what it did not create. Needs root; prints SKIPPED otherwise.

mod common;

use common::*;
use std::process::Command;
use wanmpi_emulator::{down_dir, Emulation, UpOptions, DEFAULT_MTU, MAX_MTU};

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wanmpi-emu"))
}

#[test]
fn down_removes_everything() {
    let _g = serial();
    let mut t = topo(3, "delay=1ms");
    t.paths = 2;
    let Some(emu) = up_or_skip("down_removes_everything", &t) else { return };
    let (id, dir, pid) = (emu.id().to_string(), emu.state_dir().to_path_buf(), emu.forwarder_pid());
    assert_eq!(netns_with_prefix(&format!("wemu{id}-")).len(), 3);
    let out = emu.command(2, "ip").expect("host").args(["-o", "-4", "addr", "show", "tun1"]).output().expect("ip");
    assert!(String::from_utf8_lossy(&out.stdout).contains("198.19.0.3/24"), "second path address missing");
    assert!(emu.forwarder_running());
    let final_counters = emu.down().expect("down");
    assert!(final_counters.is_some(), "forwarder did not write its counters at exit");
    assert_gone(&id, &dir, pid);
}

#[test]
fn cli_down_after_forwarder_was_killed() {
    let _g = serial();
    if skip_unprivileged("cli_down_after_forwarder_was_killed") {
        return;
    }
    let up = cli().args(["up", "--hosts", "2", "--profile", "delay=5ms"]).output().expect("run wanmpi-emu up");
    assert!(up.status.success(), "up failed: {}", String::from_utf8_lossy(&up.stderr));
    let dir = std::path::PathBuf::from(String::from_utf8_lossy(&up.stdout).trim().to_string());
    // from here on, make sure a failing assertion still cleans up
    let _cleanup = DownOnDrop(dir.clone());
    let emu = Emulation::attach(&dir).expect("attach");
    let (id, pid) = (emu.id().to_string(), emu.forwarder_pid().expect("pid"));

    // SAFETY: kill on the pid of the forwarder this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let t0 = std::time::Instant::now();
    while emu.forwarder_running() && t0.elapsed() < std::time::Duration::from_secs(3) {
        std::thread::yield_now();
    }
    assert!(!emu.forwarder_running(), "SIGKILL did not stop the forwarder");
    // its TUN devices went with it; the namespaces are still there
    let tun = emu.command(0, "ip").expect("host").args(["link", "show", "tun0"]).output().expect("ip");
    assert!(!tun.status.success(), "tun0 outlived the forwarder");
    assert_eq!(netns_with_prefix(&format!("wemu{id}-")).len(), 2);
    assert!(emu.counters().is_err(), "status must fail cleanly without a forwarder");

    let down = cli().args(["down", "--state"]).arg(&dir).output().expect("run wanmpi-emu down");
    assert!(down.status.success(), "down failed: {}", String::from_utf8_lossy(&down.stderr));
    assert_gone(&id, &dir, Some(pid));
}

#[test]
fn failed_up_cleans_up() {
    let _g = serial();
    if skip_unprivileged("failed_up_cleans_up") {
        return;
    }
    let before = netns_with_prefix("wemu");
    let dir = std::env::temp_dir().join(format!("wemu-failed-up-{}", std::process::id()));
    // a forwarder that exits at once: namespaces exist by then, and must go
    let opts = UpOptions { forwarder_exe: Some("/bin/false".into()), state_dir: Some(dir.clone()), ..UpOptions::default() };
    let err = Emulation::up(&topo(2, "delay=1ms"), &opts).err().expect("up with a broken forwarder must fail");
    println!("expected failure: {err}");
    let after: Vec<String> = netns_with_prefix("wemu").into_iter().filter(|n| !before.contains(n)).collect();
    assert!(after.is_empty(), "namespaces left by a failed up: {after:?}");
    assert!(!dir.exists(), "state dir left by a failed up");
}

#[test]
fn panicking_user_still_cleans_up() {
    let _g = serial();
    let Some(emu) = up_or_skip("panicking_user_still_cleans_up", &topo(2, "delay=1ms")) else { return };
    let (id, dir, pid) = (emu.id().to_string(), emu.state_dir().to_path_buf(), emu.forwarder_pid());
    let r = std::thread::spawn(move || {
        let _owned = emu;
        panic!("a test failing while it holds an emulation");
    })
    .join();
    assert!(r.is_err());
    assert_gone(&id, &dir, pid);
}

#[test]
fn down_never_touches_what_it_did_not_create() {
    let _g = serial();
    let Some(emu) = up_or_skip("down_never_touches_what_it_did_not_create", &topo(2, "delay=1ms")) else { return };
    let foreign = format!("wanmpi-foreign-{}", std::process::id());
    wanmpi_emulator::netns::ip(&["netns", "add", &foreign]).expect("make a foreign namespace");
    // a tampered state file names it; down must refuse to delete it
    let state = emu.state_dir().join("state");
    let mut text = std::fs::read_to_string(&state).expect("state");
    text.push_str(&format!("netns={foreign}\n"));
    std::fs::write(&state, text).expect("write state");
    let (id, pid) = (emu.id().to_string(), emu.forwarder_pid());
    // detached, so that `down_dir` reads the tampered file as a later `down` would
    let dir = emu.detach();
    let _cleanup = DownOnDrop(dir.clone());
    let r = down_dir(&dir);
    let survived = wanmpi_emulator::netns::netns_exists(&foreign);
    let _ = wanmpi_emulator::netns::ip(&["netns", "del", &foreign]);
    assert!(r.is_ok(), "down failed: {:?}", r.err());
    assert!(survived, "down deleted a namespace it did not create");
    assert_gone(&id, &dir, pid);
}

#[test]
fn mtu_defaults_to_1500_the_option_sets_the_hosts_devices_and_bad_values_are_refused() {
    let _g = serial();
    if skip_unprivileged("mtu_defaults_to_1500_the_option_sets_the_hosts_devices_and_bad_values_are_refused") {
        return;
    }
    // no MTU: the default, a real WAN's 1500; then the largest and one between
    for (mtu, want) in [(None, 1500), (Some(MAX_MTU), 65000), (Some(9000), 9000)] {
        assert_eq!(mtu.unwrap_or(DEFAULT_MTU), want);
        let opts = UpOptions { mtu, ..common::opts() };
        let emu = Emulation::up(&topo(2, "delay=1ms"), &opts).unwrap_or_else(|e| panic!("up with mtu {mtu:?}: {e}"));
        for h in emu.hosts() {
            // /sys keeps the caller's view after setns: ask `ip` instead.
            let out = Command::new("ip").args(["-n", &h.netns, "link", "show", "tun0"]).output().expect("ip link");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(&format!(" mtu {want} ")), "host {} with mtu {mtu:?}: {text}", h.index);
        }
        drop(emu);
    }
    let bad = UpOptions { mtu: Some(100), ..common::opts() };
    let err = Emulation::up(&topo(2, "delay=1ms"), &bad).err().expect("mtu 100 must be refused");
    assert!(err.to_string().contains("mtu 100"), "{err}");
    let big = UpOptions { mtu: Some(MAX_MTU + 1), ..common::opts() };
    assert!(Emulation::up(&topo(2, "delay=1ms"), &big).is_err(), "mtu above {MAX_MTU} must be refused");
}
