//! What an eavesdropper between two hosts reads of a real job (issue 14's
//! target: "a captured tcp stream between two ranks contains no plaintext
//! of a known message"). Two emulated hosts (1 ms one way), one rank on
//! each started by mpirun through `ip netns exec {host}`, nothing set but
//! the transport; a packet capture inside host 0's namespace
//! (`wanmpi_emulator::Capture`) while `known_text` sends a known text both
//! ways in a short and a long message. The key/value service is on a Unix
//! socket, so everything on the link is the transports'.
//!
//! By default every transport seals between hosts: no piece of the text in
//! the capture, on tcp, sctp, wamp and the default transport. With sealing
//! turned off (`WANMPI_TCP_ENCRYPT=0`, `WANMPI_SCTP_ENCRYPT=0`) and with
//! `--insecure-lan` and no site map, the text is there: the capture does
//! see the data. `--insecure-lan` with the hosts in different sites seals.
//!
//! Needs root, the emulator's forwarder and the conformance programs
//! (`cargo build -p wanmpi-emulator -p wanmpi-conformance`, same profile);
//! says why and skips without them.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use wanmpi_emulator::{Capture, Emulation, LinkProfile, Topology, UpOptions};

fn sibling(name: &str) -> Option<PathBuf> {
    Some(Path::new(MPIRUN).parent()?.join(name)).filter(|p| p.is_file())
}

fn skip_reason() -> Option<String> {
    if let Err(e) = wanmpi_emulator::preflight() {
        return Some(format!("emulated hosts cannot be made here: {e}"));
    }
    if sibling("wanmpi-emu").is_none() {
        return Some("build the forwarder first (cargo build -p wanmpi-emulator, same profile)".into());
    }
    if sibling("known_text").is_none() {
        return Some("build the conformance programs first (cargo build -p wanmpi-conformance, same profile)".into());
    }
    None
}

/// Any 16-byte piece of `text` in `bytes`.
fn shows(bytes: &[u8], text: &str) -> bool {
    text.as_bytes().windows(16).any(|piece| bytes.windows(16).any(|w| w == piece))
}

/// Runs `known_text` on the two hosts with `extra` mpirun options while
/// host 0 is captured; returns the capture.
fn captured(emu: &Emulation, text: &str, extra: &[&str]) -> Vec<u8> {
    let hosts = emu.hosts();
    let list = format!("{},{}", hosts[0].netns, hosts[1].netns);
    let prog = sibling("known_text").expect("known_text");
    let mut args = vec!["--host", &list, "--launch-agent", "ip netns exec {host}", "--timeout", "50"];
    args.extend(extra);
    args.extend([prog.to_str().expect("path"), text]);
    let cap = Capture::start(emu, 0).expect("capture in host 0");
    let r = mpirun(&args);
    let seen = cap.finish();
    assert!(r.code == Some(0) && r.stdout.contains("PASS known_text on 2 ranks"), "{extra:?}: {:?}\n{}\n{}", r.code, r.stdout, r.stderr);
    // Both messages went both ways: at least 400 kB crossed host 0's link.
    assert!(seen.len() > 400_000, "{extra:?}: the capture saw only {} bytes", seen.len());
    eprintln!("{extra:?}: {} bytes captured in {:?}, text seen: {}", seen.len(), r.took, shows(&seen, text));
    seen
}

#[test]
fn between_hosts_a_capture_holds_no_plaintext_unless_sealing_is_off() {
    let test = "between_hosts_a_capture_holds_no_plaintext_unless_sealing_is_off";
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED {test}: {why}");
        return;
    }
    let emu = Emulation::up(&Topology::uniform(2, LinkProfile::parse("delay=1ms").expect("profile")), &UpOptions::default()).expect("emulation up");
    let text = format!("known text {}: the eagle lands at dawn", std::process::id());
    for sealed in [
        &["--transport", "tcp"][..],
        &["--transport", "sctp"],
        &["--transport", "wamp"],
        &[],
        &["--transport", "tcp", "--insecure-lan", "-x", "WANMPI_SITE_MAP=0,1"],
    ] {
        assert!(!shows(&captured(&emu, &text, sealed), &text), "{sealed:?}: plaintext on the wire");
    }
    for plain in [
        &["--transport", "tcp", "-x", "WANMPI_TCP_ENCRYPT=0"][..],
        &["--transport", "sctp", "-x", "WANMPI_SCTP_ENCRYPT=0"],
        &["--transport", "tcp", "--insecure-lan"],
    ] {
        assert!(shows(&captured(&emu, &text, plain), &text), "{plain:?}: the capture should show the text");
    }
    drop(emu);
}
