//! Addresses that work (issue 14 item 3): `mpirun --hostfile` over real ssh
//! with nothing else set, where this machine's host name resolves to
//! loopback in the ranks' view (the default in namespaces: /etc/hosts says
//! `127.0.0.1 vm`). The key/value service's address is chosen per host by
//! route and each rank publishes the address its route toward the others
//! uses; `--net` and `--if` (and `if=`/`net=` in the hostfile) choose among
//! two addresses; an IPv6 job runs over tcp, sctp and wamp, sealed between
//! its hosts.
//!
//! Emulated hosts (network namespaces behind the WAN emulator, 198.18.x and
//! 198.19.x), sshd in each server host; the hostfile names hosts `alpha`
//! and `beta`, names only mpirun's host knows (/etc/netns/NS/hosts, which
//! `ip netns exec` mounts over /etc/hosts). IPv6: two namespaces joined by
//! a veth pair, 2001:2::1 and 2001:2::2. And ranks in namespaces named only
//! by their names (`ip netns exec {host}`) publish an address that is not
//! loopback.
//!
//! Needs root, sshd, the emulator's forwarder and the examples' `hello`
//! (`cargo build -p wanmpi-emulator -p wanmpi-examples`, same profile);
//! says why and skips without them.

mod common;
mod sshd;
use common::*;
use sshd::Sshd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use wanmpi_emulator::{Emulation, LinkProfile, Topology, UpOptions};

fn sibling(name: &str) -> Option<PathBuf> {
    Some(Path::new(MPIRUN).parent()?.join(name)).filter(|p| p.is_file())
}

fn skip_reason() -> Option<String> {
    if let Err(e) = wanmpi_emulator::preflight() {
        return Some(format!("emulated hosts cannot be made here: {e}"));
    }
    if let Some(why) = sshd::missing() {
        return Some(why);
    }
    if sibling("wanmpi-emu").is_none() {
        return Some("build the forwarder first (cargo build -p wanmpi-emulator, same profile)".into());
    }
    if sibling("hello").is_none() {
        return Some("build the examples first (cargo build -p wanmpi-examples, same profile)".into());
    }
    None
}

/// Host names only the namespace `netns` knows, removed at the end.
struct Names(PathBuf);

impl Names {
    fn write(netns: &str, lines: &str) -> Names {
        let dir = PathBuf::from("/etc/netns").join(netns);
        std::fs::create_dir_all(&dir).expect("/etc/netns/NS");
        std::fs::write(dir.join("hosts"), format!("127.0.0.1 localhost\n{lines}")).expect("hosts");
        Names(dir)
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fields drop in order: sshd before the names and the hosts.
struct Site {
    sshd: Sshd,
    _names: Names,
    _emu: Emulation,
    client: String,
    dir: sshd::Scratch,
}

/// Three emulated hosts with `paths` addresses each: mpirun's in the first,
/// sshd in `alpha` (198.18.0.2) and `beta` (198.18.0.3).
fn bring_up(name: &str, paths: u8) -> Site {
    let mut topo = Topology::uniform(3, LinkProfile::parse("delay=1ms").expect("profile"));
    topo.paths = paths;
    let emu = Emulation::up(&topo, &UpOptions::default()).expect("emulation up");
    let hosts = emu.hosts();
    let client = hosts[0].netns.clone();
    let names = Names::write(&client, &format!("{} alpha\n{} beta\n", hosts[1].addrs[0], hosts[2].addrs[0]));
    let mut sshd = Sshd::keys(name);
    for h in &hosts[1..] {
        sshd.serve(&h.netns, &h.addrs[0].to_string());
    }
    for s in ["alpha", "beta"] {
        sshd.wait_for(&client, s);
    }
    let dir = std::env::temp_dir().join(format!("wanmpi-addr-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    Site { sshd, _names: names, _emu: emu, client, dir: sshd::Scratch(dir) }
}

/// mpirun inside `netns`: ssh options, then `args`; nothing else.
fn mpirun_in(netns: &str, sshd: &Sshd, args: &[&str]) -> Run {
    let mut c = mpirun_in_netns(netns, &sshd.ssh_args);
    c.args(args);
    finish(c.spawn().expect("start mpirun"), Instant::now())
}

impl Site {
    fn hostfile(&self, text: &str) -> String {
        let p = self.dir.0.join(format!("hosts.{}", text.len()));
        std::fs::write(&p, text).expect("hostfile");
        p.display().to_string()
    }
    fn mpirun(&self, args: &[&str]) -> Run {
        mpirun_in(&self.client, &self.sshd, args)
    }
}

/// `[rank] key=value` lines of a `--tag-output` run, by rank.
fn tagged(r: &Run, key: &str) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = r
        .stdout
        .lines()
        .filter_map(|l| {
            let (rank, rest) = l.strip_prefix('[')?.split_once("] ")?;
            Some((rank.parse().ok()?, rest.strip_prefix(key)?.strip_prefix('=')?.to_string()))
        })
        .collect();
    v.sort();
    v
}

fn ok(r: &Run, what: &str) {
    assert_eq!(r.code, Some(0), "{what}\nstdout: {}\nstderr: {}", r.stdout, r.stderr);
}

const PROBE_STEPS: [&str; 4] = ["addr", "env:WANMPI_BOOTSTRAP", "exchange", "finalize"];

#[test]
fn a_hostfile_alone_runs_a_job_across_hosts() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED a_hostfile_alone_runs_a_job_across_hosts: {why}");
        return;
    }
    let site = bring_up("plain", 1);
    let hf = site.hostfile("alpha slots=1\nbeta slots=4\n");
    let mut args = vec!["--hostfile", &hf, "--tag-output", PROBE];
    args.extend(PROBE_STEPS);
    let r = site.mpirun(&args);
    ok(&r, "probe");
    let want: Vec<(u32, String)> = (0..5).map(|i| (i, if i == 0 { "198.18.0.2" } else { "198.18.0.3" }.to_string())).collect();
    assert_eq!(tagged(&r, "addr"), want, "each rank publishes its host's address toward the others");
    for (rank, kv) in tagged(&r, "WANMPI_BOOTSTRAP") {
        assert!(kv.starts_with("tcp:198.18.0.1:"), "rank {rank} was told {kv}, not mpirun's address toward it");
    }
    assert_eq!(r.stdout.matches("got v0,v1,v2,v3,v4").count(), 5, "{}", r.stdout);
    // Hosts as ssh's user@host (Open MPI's hostfiles allow it): the same
    // routes, found from the machine part of the name.
    let hf_user = site.hostfile("root@alpha slots=1\nroot@beta slots=4\n");
    let mut args = vec!["--hostfile", &hf_user, "--tag-output", PROBE];
    args.extend(PROBE_STEPS);
    let r = site.mpirun(&args);
    ok(&r, "probe with user@host");
    assert_eq!(tagged(&r, "addr"), want, "user@host: each rank publishes its host's address");
    for (rank, kv) in tagged(&r, "WANMPI_BOOTSTRAP") {
        assert!(kv.starts_with("tcp:198.18.0.1:"), "user@host: rank {rank} was told {kv}");
    }
    // Hosts named by aliases of an ssh configuration (`Host gamma` /
    // `HostName 198.18.0.2`), which DNS does not know: mpirun asks ssh
    // (`ssh -G`) which machine each one is.
    let cfg = site.dir.0.join("ssh_config");
    std::fs::write(&cfg, "Host gamma\n  HostName 198.18.0.2\nHost delta\n  HostName 198.18.0.3\n").expect("ssh config");
    let hf_alias = site.hostfile("gamma slots=1\ndelta slots=4\n");
    let mut c = mpirun_in_netns(&site.client, &format!("{} -F {}", site.sshd.ssh_args, cfg.display()));
    c.args(["--hostfile", &hf_alias, "--tag-output", PROBE]).args(PROBE_STEPS);
    let r = finish(c.spawn().expect("start mpirun"), Instant::now());
    ok(&r, "probe with ssh aliases");
    assert_eq!(tagged(&r, "addr"), want, "ssh aliases: each rank publishes its host's address");
    for (rank, kv) in tagged(&r, "WANMPI_BOOTSTRAP") {
        assert!(kv.starts_with("tcp:198.18.0.1:"), "ssh aliases: rank {rank} was told {kv}");
    }
    // A real MPI program: ranks reach each other at what they published.
    let hello = sibling("hello").expect("hello");
    let r = site.mpirun(&["--hostfile", &hf, hello.to_str().expect("path")]);
    ok(&r, "hello");
    assert!(r.stdout.contains("sum of ranks = 10"), "{}", r.stdout);
}

/// A hostfile listing every host by address, mpirun's own included (no
/// sshd there): its ranks start directly, not through ssh to itself.
#[test]
fn this_machine_named_by_its_address_runs_its_ranks_directly() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED this_machine_named_by_its_address_runs_its_ranks_directly: {why}");
        return;
    }
    let site = bring_up("self", 1);
    let hf = site.hostfile("198.18.0.1 slots=2\n198.18.0.2 slots=1\n");
    let mut args = vec!["--hostfile", &hf, "--tag-output", PROBE];
    args.extend(PROBE_STEPS);
    let r = site.mpirun(&args);
    ok(&r, "probe");
    assert_eq!(tagged(&r, "addr"), [(0, "198.18.0.1".into()), (1, "198.18.0.1".into()), (2, "198.18.0.2".into())]);
    let hello = sibling("hello").expect("hello");
    let r = site.mpirun(&["--hostfile", &hf, hello.to_str().expect("path")]);
    ok(&r, "hello");
    assert!(r.stdout.contains("sum of ranks = 3"), "{}", r.stdout);
}

#[test]
fn net_and_if_choose_among_two_addresses() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED net_and_if_choose_among_two_addresses: {why}");
        return;
    }
    let site = bring_up("net", 2);
    let hf = site.hostfile("alpha slots=1\nbeta slots=1\n");
    let probe = |extra: &[&str], hf: &str| {
        let mut args = extra.to_vec();
        args.extend(["--hostfile", hf, "--tag-output", PROBE]);
        args.extend(PROBE_STEPS);
        site.mpirun(&args)
    };
    let r = probe(&["--net", "198.19.0.0/24"], &hf);
    ok(&r, "--net");
    assert_eq!(tagged(&r, "addr"), [(0, "198.19.0.2".into()), (1, "198.19.0.3".into())]);
    for (rank, kv) in tagged(&r, "WANMPI_BOOTSTRAP") {
        assert!(kv.starts_with("tcp:198.19.0.1:"), "rank {rank}: mpirun's own address follows --net too: {kv}");
    }
    // The job's --if, and a host's if= over it.
    let hf_if = site.hostfile("alpha slots=1 if=tun0\nbeta slots=1\n");
    let r = probe(&["--if", "tun1"], &hf_if);
    ok(&r, "--if");
    assert_eq!(tagged(&r, "addr"), [(0, "198.18.0.2".into()), (1, "198.19.0.3".into())]);
    // The job's --net, and a host's net= over it.
    let hf_net = site.hostfile("alpha slots=1 net=198.18.0.0/24\nbeta slots=1\n");
    let r = probe(&["--net", "198.19.0.0/24"], &hf_net);
    ok(&r, "net=");
    assert_eq!(tagged(&r, "addr"), [(0, "198.18.0.2".into()), (1, "198.19.0.3".into())]);
    // The second path carries a real job.
    let hello = sibling("hello").expect("hello");
    let r = site.mpirun(&["--net", "198.19.0.0/24", "--transport", "tcp", "--hostfile", &hf, hello.to_str().expect("path")]);
    ok(&r, "hello over the second path");
    assert!(r.stdout.contains("sum of ranks = 1"), "{}", r.stdout);
    // A network no host has: a clear error naming the host and its addresses.
    let r = probe(&["--net", "198.18.9.0/24"], &hf);
    assert_ne!(r.code, Some(0), "{}", r.stdout);
    let host = wanmpi_bootstrap::route::hostname();
    let want = format!("host {host} has no address in 198.18.9.0/24; it has: ");
    // Whichever rank fails first ends the job: its host's addresses.
    assert!(r.stderr.contains(&want) && r.stderr.contains("tun1 198.19.0."), "{}", r.stderr);
}

/// Two namespaces joined by a veth pair with IPv6 addresses only; deleted
/// (and the pair with them) at the end.
struct V6Pair([String; 2]);

impl V6Pair {
    fn up() -> V6Pair {
        let id = std::process::id();
        let ns = [format!("wanmpi-v6a-{id}"), format!("wanmpi-v6b-{id}")];
        let pair = V6Pair(ns.clone());
        let ip = |args: &[&str]| sshd::run_ok(Command::new("ip").args(args), &args.join(" "));
        for n in &ns {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        let (va, vb) = (format!("v6a{}", id % 100_000), format!("v6b{}", id % 100_000));
        ip(&["link", "add", &va, "netns", &ns[0], "type", "veth", "peer", "name", &vb, "netns", &ns[1]]);
        for (n, dev, a) in [(&ns[0], &va, "2001:2::1/64"), (&ns[1], &vb, "2001:2::2/64")] {
            // nodad: usable at once, no duplicate detection to wait for.
            ip(&["-n", n, "addr", "add", a, "dev", dev, "nodad"]);
            ip(&["-n", n, "link", "set", dev, "up"]);
        }
        pair
    }
}

impl Drop for V6Pair {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

#[test]
fn an_ipv6_job_runs_over_tcp_sctp_and_wamp() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED an_ipv6_job_runs_over_tcp_sctp_and_wamp: {why}");
        return;
    }
    let pair = V6Pair::up();
    let mut sshd = Sshd::keys("v6");
    sshd.serve(&pair.0[1], "2001:2::2");
    sshd.wait_for(&pair.0[0], "2001:2::2");
    let dir = sshd::Scratch(std::env::temp_dir().join(format!("wanmpi-addr-{}-v6", std::process::id())));
    std::fs::create_dir_all(&dir.0).expect("scratch");
    let hf = dir.0.join("hosts");
    // Rank 0 next to mpirun, rank 1 behind ssh on the other side.
    std::fs::write(&hf, "localhost slots=1\n[2001:2::2] slots=1\n").expect("hostfile");
    let hf = hf.display().to_string();
    let mut args = vec!["--hostfile", &hf, "--tag-output", PROBE];
    args.extend(PROBE_STEPS);
    let r = mpirun_in(&pair.0[0], &sshd, &args);
    ok(&r, "probe over IPv6");
    assert_eq!(tagged(&r, "addr"), [(0, "2001:2::1".into()), (1, "2001:2::2".into())]);
    let kv = tagged(&r, "WANMPI_BOOTSTRAP");
    assert!(kv[1].1.starts_with("tcp:[2001:2::1]:"), "the far rank reaches the service over IPv6: {kv:?}");
    let hello = sibling("hello").expect("hello");
    // An IPv6 network chooses too: the ranks' addresses, and mpirun's own
    // for the far rank (the near one keeps loopback, here ::1).
    let mut args = vec!["--net", "2001:2::/64", "--hostfile", &hf, "--tag-output", PROBE];
    args.extend(PROBE_STEPS);
    let r = mpirun_in(&pair.0[0], &sshd, &args);
    ok(&r, "probe with --net 2001:2::/64");
    assert_eq!(tagged(&r, "addr"), [(0, "2001:2::1".into()), (1, "2001:2::2".into())]);
    let kv = tagged(&r, "WANMPI_BOOTSTRAP");
    assert!(kv[0].1.starts_with("tcp:[::1]:") && kv[1].1.starts_with("tcp:[2001:2::1]:"), "{kv:?}");
    // Sealed between the two hosts by default, as over IPv4 (wamp always).
    for (t, stats) in [("tcp", "WANMPI_STATS=1"), ("sctp", "WANMPI_SCTP_STATS=1"), ("wamp", "WANMPI_WAMP_STATS=0")] {
        let r = mpirun_in(&pair.0[0], &sshd, &["--transport", t, "-x", stats, "--hostfile", &hf, hello.to_str().expect("path")]);
        ok(&r, &format!("hello over IPv6 on {t}"));
        assert!(r.stdout.contains("sum of ranks = 1"), "{t}: {}", r.stdout);
        if t != "wamp" {
            let line = format!("wanmpi {t}: rank 0: sealed (AES-128-GCM) to ranks [1], plain to ranks []");
            assert!(r.stderr.contains(&line), "{t}: {}", r.stderr);
        }
    }
    drop(sshd);
    drop(pair);
}

#[test]
fn ranks_in_namespaces_known_only_by_name_publish_a_reachable_address() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED ranks_in_namespaces_known_only_by_name_publish_a_reachable_address: {why}");
        return;
    }
    // No addr=, names that are no addresses, the service on a Unix socket:
    // nothing to route toward, so each rank takes its host's first address
    // that is not loopback (before, 127.0.0.1, which the other host cannot
    // reach).
    let emu = Emulation::up(&Topology::uniform(2, LinkProfile::parse("delay=1ms").expect("profile")), &UpOptions::default()).expect("emulation up");
    let hosts = emu.hosts();
    let list = format!("{},{}", hosts[0].netns, hosts[1].netns);
    let mut args = vec!["--host", &list, "--launch-agent", "ip netns exec {host}", "--tag-output", PROBE];
    args.extend(PROBE_STEPS);
    let r = mpirun(&args);
    ok(&r, "probe");
    assert_eq!(tagged(&r, "addr"), [(0, hosts[0].addrs[0].to_string()), (1, hosts[1].addrs[0].to_string())]);
    let hello = sibling("hello").expect("hello");
    let r = mpirun(&["--host", &list, "--launch-agent", "ip netns exec {host}", "--transport", "tcp", hello.to_str().expect("path")]);
    ok(&r, "hello");
    assert!(r.stdout.contains("sum of ranks = 1"), "{}", r.stdout);
    drop(emu);
}
