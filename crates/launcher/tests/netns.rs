//! Ranks in real network namespaces, started with `ip netns exec {host}`, as
//! the WAN emulator places them. Needs root and iproute2; says so and passes
//! vacuously where they are missing (a developer machine without root). And
//! a host with IPv6 loopback only runs every network transport over ::1.

mod common;
use common::*;
use std::process::Command;

/// Network namespaces that are deleted when the test ends, however it ends.
struct Namespaces(Vec<String>);

impl Namespaces {
    fn create(names: &[String]) -> Option<Namespaces> {
        let mut made = Namespaces(Vec::new());
        for n in names {
            let ok = Command::new("ip").args(["netns", "add", n]).status().map(|s| s.success()).unwrap_or(false);
            if !ok {
                return None;
            }
            made.0.push(n.clone());
        }
        Some(made)
    }

    /// Joins the first two with a veth pair on 198.18.200.0/24, as hosts
    /// on one network: a job across hosts needs an address to publish
    /// (loopback alone is refused at once).
    fn link_first_two(&self) -> bool {
        let (a, b) = (&self.0[0], &self.0[1]);
        let run = |args: &[&str]| Command::new("ip").args(args).status().map(|s| s.success()).unwrap_or(false);
        run(&["link", "add", "name", "v0", "netns", a, "type", "veth", "peer", "name", "v0", "netns", b])
            && [(a, "198.18.200.1/24"), (b, "198.18.200.2/24")].iter().all(|(n, addr)| {
                run(&["-n", n, "addr", "add", addr, "dev", "v0"])
                    && run(&["-n", n, "link", "set", "v0", "up"])
                    && run(&["-n", n, "link", "set", "lo", "up"])
            })
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

#[test]
fn ranks_run_in_network_namespaces() {
    let names: Vec<String> = ["a", "b"].iter().map(|s| format!("wanmpi-lt{}-{s}", std::process::id())).collect();
    let Some(ns) = Namespaces::create(&names) else {
        eprintln!("skipped: cannot create network namespaces here (needs root and iproute2)");
        return;
    };
    assert!(ns.link_first_two(), "cannot join the namespaces with a veth pair");
    let hosts = format!("{}:2,{}:1", names[0], names[1]);
    let ok = mpirun(&["--host", &hosts, "--launch-agent", "ip netns exec {host}", PROBE, "exchange", "finalize"]);
    assert_eq!(ok.code, Some(0), "stderr: {}", ok.stderr);
    assert_eq!(ok.stdout.matches("got v0,v1,v2").count(), 3, "{}", ok.stdout);
    let bad = mpirun(&["--host", &hosts, "--launch-agent", "ip netns exec {host}", PROBE, "exchange", "fence", "kill@2", "sleep:60", "finalize"]);
    assert_eq!(bad.code, Some(137), "stderr: {}", bad.stderr);
    assert!(bad.stderr.contains("rank 2 (pid ") && bad.stderr.contains(&format!("on {}) was killed by signal 9", names[1])), "{}", bad.stderr);
}

/// A host with IPv6 loopback only (127.0.0.1 removed from `lo` in a
/// namespace of its own): told `WANMPI_ADDR=::1`, every network transport
/// binds, publishes and connects over IPv6, since nothing else is there
/// to fall back on.
#[test]
fn every_transport_runs_over_ipv6_loopback() {
    let name = format!("wanmpi-lt{}-v6", std::process::id());
    let Some(_ns) = Namespaces::create(std::slice::from_ref(&name)) else {
        eprintln!("skipped: cannot create network namespaces here (needs root and iproute2)");
        return;
    };
    let Some(hello) = Some(std::path::Path::new(MPIRUN).with_file_name("hello")).filter(|p| p.is_file()) else {
        eprintln!("skipped: build the examples first (cargo build -p wanmpi-examples, same profile)");
        return;
    };
    for args in [["link", "set", "lo", "up"].as_slice(), &["addr", "del", "127.0.0.1/8", "dev", "lo"]] {
        let ok = Command::new("ip").arg("-n").arg(&name).args(args).status().is_ok_and(|s| s.success());
        assert!(ok, "ip -n {name} {args:?}");
    }
    for t in ["tcp", "sctp", "wamp", "adaptive"] {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &name, MPIRUN, "-n", "3", "--timeout", "30", "-x", "WANMPI_ADDR=::1", "--transport", t]).arg(&hello);
        c.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_")) {
            c.env_remove(k);
        }
        let r = mpirun_with(c);
        assert_eq!(r.code, Some(0), "{t} over ::1: {}", r.stderr);
        assert!(r.stdout.contains("sum of ranks = 3"), "{t} over ::1: {}", r.stdout);
    }
}
