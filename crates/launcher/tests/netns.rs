//! Ranks in real network namespaces, started with `ip netns exec {host}`, as
//! the WAN emulator places them. Needs root and iproute2; says so and passes
//! vacuously where they are missing (a developer machine without root).

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
    let Some(_ns) = Namespaces::create(&names) else {
        eprintln!("skipped: cannot create network namespaces here (needs root and iproute2)");
        return;
    };
    let hosts = format!("{}:2,{}:1", names[0], names[1]);
    let ok = mpirun(&["--host", &hosts, "--launch-agent", "ip netns exec {host}", PROBE, "exchange", "finalize"]);
    assert_eq!(ok.code, Some(0), "stderr: {}", ok.stderr);
    assert_eq!(ok.stdout.matches("got v0,v1,v2").count(), 3, "{}", ok.stdout);
    let bad = mpirun(&["--host", &hosts, "--launch-agent", "ip netns exec {host}", PROBE, "exchange", "fence", "kill@2", "sleep:60", "finalize"]);
    assert_eq!(bad.code, Some(137), "stderr: {}", bad.stderr);
    assert!(bad.stderr.contains("rank 2 (pid ") && bad.stderr.contains(&format!("on {}) was killed by signal 9", names[1])), "{}", bad.stderr);
}
