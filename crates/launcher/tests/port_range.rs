//! `mpirun --port-range LOW-HIGH`: every socket of the job that listens
//! (TCP) or receives datagrams (unconnected UDP) — the key/value service,
//! tcp's listeners, sctp's and wamp's UDP sockets — has its port in the
//! range. Read from /proc while a ping-pong runs on each transport.
//!
//! Needs the examples' `pingpong` built beside mpirun (`cargo build -p
//! wanmpi-examples`, same profile); says why and skips without it.

mod common;
use common::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn sibling(name: &str) -> Option<PathBuf> {
    let dir = Path::new(MPIRUN).parent()?;
    Some(dir.join(name)).filter(|p| p.is_file())
}

/// Every process under `root`, `root` included.
fn tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for e in std::fs::read_dir("/proc").expect("/proc").filter_map(|e| e.ok()) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let ppid = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if let Some(pp) = ppid {
            children.entry(pp).or_default().push(pid);
        }
    }
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        all.extend(children.get(&all[i]).cloned().unwrap_or_default());
        i += 1;
    }
    all
}

/// Socket inodes a process holds.
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return vec![] };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok())
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    TcpListen,
    /// An established connection: the end that accepted it has the
    /// listener's port, so one of its two ports must be in the range.
    TcpConn,
    Udp,
}

/// inode -> (kind, local port, remote port) of every listening or
/// established TCP socket and every unconnected UDP socket (one that
/// receives from anyone). A connected UDP socket that only asks the kernel
/// a route's MTU sends nothing and is not a receiving port.
fn sockets() -> HashMap<u64, (Kind, u16, u16)> {
    let mut m = HashMap::new();
    for (file, tcp) in [("tcp", true), ("tcp6", true), ("udp", false), ("udp6", false)] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/net/{file}")) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 {
                continue;
            }
            let port = |a: &str| a.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            let (Some(local), Some(remote), Ok(inode)) = (port(f[1]), port(f[2]), f[9].parse::<u64>()) else { continue };
            let kind = match (tcp, f[3]) {
                (true, "0A") => Kind::TcpListen,
                (true, "01") => Kind::TcpConn,
                (false, _) if remote == 0 => Kind::Udp,
                _ => continue,
            };
            m.insert(inode, (kind, local, remote));
        }
    }
    m
}

type Seen = HashSet<(u32, Kind, u16, u16)>;

/// Runs a ping-pong of 2 ranks over `transport` with the key/value service
/// on TCP and `--port-range low-high`; watches the job's sockets until
/// mpirun's listener and each rank's transport socket were seen (30 s at
/// most), then ends the job. Returns mpirun's pid and every (pid, kind,
/// local port, remote port) seen.
fn watch_job(pingpong: &Path, transport: &str, (low, high): (u16, u16)) -> (u32, Seen) {
    let range = format!("{low}-{high}");
    let args = ["-n", "2", "--bootstrap", "tcp", "--port-range", &range, "--transport", transport];
    let mut c = command(&args);
    c.arg(pingpong).args(["--sizes", "1", "--iters", "10000000"]);
    let started = Instant::now();
    let child = c.spawn().expect("start mpirun");
    let mpirun = child.id();
    let mut seen = Seen::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !complete(transport, mpirun, &seen) && Instant::now() < deadline {
        let all = sockets();
        for pid in tree(mpirun) {
            for inode in socket_inodes(pid) {
                if let Some(&(kind, local, remote)) = all.get(&inode) {
                    seen.insert((pid, kind, local, remote));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling the mpirun this test started.
    unsafe { libc::kill(mpirun as i32, libc::SIGTERM) };
    let r = finish(child, started);
    assert_eq!(r.code, Some(128 + libc::SIGTERM), "{transport}: the job ended on its own or failed:\n{}", r.stderr);
    (mpirun, seen)
}

/// The ranks (not mpirun) that showed the transport's socket: a UDP socket
/// for sctp and wamp; for tcp, whose listeners close once every peer is
/// connected, a connection to the other rank.
fn ranks_seen(transport: &str, mpirun: u32, seen: &Seen) -> HashSet<u32> {
    let ranks: HashSet<u32> = seen.iter().map(|s| s.0).filter(|&p| p != mpirun).collect();
    let kv_ports: HashSet<u16> = seen.iter().filter(|s| s.0 == mpirun && s.1 == Kind::TcpListen).map(|s| s.2).collect();
    let transport_socket = |&(_, kind, _, remote): &(u32, Kind, u16, u16)| match transport {
        "tcp" => kind == Kind::TcpConn && !kv_ports.contains(&remote),
        _ => kind == Kind::Udp,
    };
    seen.iter().filter(|s| ranks.contains(&s.0) && transport_socket(s)).map(|s| s.0).collect()
}

fn complete(transport: &str, mpirun: u32, seen: &Seen) -> bool {
    let service = seen.iter().any(|s| s.0 == mpirun && s.1 == Kind::TcpListen);
    service && ranks_seen(transport, mpirun, seen).len() >= 2
}

#[test]
fn every_listening_or_receiving_port_lies_in_the_range() {
    let Some(pingpong) = sibling("pingpong") else {
        eprintln!("SKIPPED: build pingpong first (cargo build -p wanmpi-examples, same profile as this test)");
        return;
    };
    // Below Linux's ephemeral range, so no outgoing connection of the
    // system takes these ports; a block of its own per run of the test.
    let base = 23000 + (std::process::id() % 300) as u16 * 24;
    for (i, transport) in ["tcp", "sctp", "wamp"].into_iter().enumerate() {
        let (low, high) = (base + 8 * i as u16, base + 8 * i as u16 + 7);
        let (mpirun, seen) = watch_job(&pingpong, transport, (low, high));
        eprintln!("{transport}: mpirun {mpirun}, sockets (pid, kind, local, remote) {seen:?}");
        assert!(complete(transport, mpirun, &seen), "{transport}: the key/value listener or a rank's socket was not seen: {seen:?}");
        let inside = |p: &u16| (low..=high).contains(p);
        for (pid, kind, local, remote) in &seen {
            let ok = match kind {
                Kind::TcpListen | Kind::Udp => inside(local),
                Kind::TcpConn => inside(local) || inside(remote),
            };
            assert!(ok, "{transport}: process {pid} has a {kind:?} socket {local} -> {remote}, outside {low}-{high}");
        }
    }
}

#[test]
fn a_bad_port_range_is_a_usage_error() {
    for bad in ["5", "10-5", "0-9", "1-70000"] {
        let r = mpirun(&["-n", "1", "--port-range", bad, PROBE]);
        assert_eq!(r.code, Some(2), "--port-range {bad}: {}", r.stderr);
        assert!(r.stderr.contains("--port-range"), "{}", r.stderr);
    }
    let mut c = command(&["-n", "1", PROBE]);
    c.env("WANMPI_PORT_RANGE", "9-1");
    let r = mpirun_with(c);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("WANMPI_PORT_RANGE"), "{}", r.stderr);
}
