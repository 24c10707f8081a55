//! The key/value service and its client, with ranks as threads.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{BootstrapAddr, BootstrapError, Client, KeyValue, Server, ServerConfig, ServerEvent};

const SECRET: [u8; 32] = [0x5a; 32];
const T: Duration = Duration::from_secs(10);

fn sock_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wanmpi-kv-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("kv.sock")
}

fn start(bind: BootstrapAddr, size: u32, fence_timeout: Duration) -> (Server, Receiver<ServerEvent>) {
    let (tx, rx) = channel();
    let tx = std::sync::Mutex::new(tx);
    let mut cfg = ServerConfig::new(size, SECRET);
    cfg.fence_timeout = fence_timeout;
    cfg.hello_timeout = Duration::from_secs(2);
    let server = Server::start(
        &bind,
        cfg,
        Box::new(move |e| {
            let _ = tx.lock().unwrap().send(e);
        }),
    )
    .unwrap();
    (server, rx)
}

fn exchange(address: &str, size: u32) {
    let handles: Vec<_> = (0..size)
        .map(|rank| {
            let address = address.to_string();
            std::thread::spawn(move || {
                let mut c = Client::connect_to(&address, rank, size, &SECRET, T).unwrap();
                assert_eq!((c.rank(), c.size()), (rank, size));
                c.put(&format!("ep.{rank}"), &format!("host{rank}:{}", 5000 + rank)).unwrap();
                c.put(&format!("extra.{rank}"), "x").unwrap();
                c.fence().unwrap();
                let got: Vec<String> = (0..size).map(|r| c.get(&format!("ep.{r}")).unwrap()).collect();
                // A second round sees the second round's values.
                c.put(&format!("round2.{rank}"), &(rank * 10).to_string()).unwrap();
                c.fence().unwrap();
                let second: Vec<String> = (0..size).map(|r| c.get(&format!("round2.{r}")).unwrap()).collect();
                assert!(matches!(c.get("never.put"), Err(BootstrapError::Missing(_))));
                // Many keys in one round trip (and more than one batch of
                // them), the same values in the same order.
                let keys: Vec<String> = (0..600).map(|i| format!("ep.{}", i % size)).collect();
                let many = c.get_many(&keys).unwrap();
                assert_eq!(many.len(), 600);
                assert!(many.iter().enumerate().all(|(i, v)| *v == got[i % size as usize]));
                // A missing key among them fails the call, and the
                // connection stays in step for the next request.
                let mixed = vec!["ep.0".to_string(), "never.put".into(), format!("ep.{}", size - 1)];
                assert!(matches!(c.get_many(&mixed), Err(BootstrapError::Missing(k)) if k == "never.put"));
                assert_eq!(c.get("ep.0").unwrap(), got[0]);
                c.finalize().unwrap();
                (got, second)
            })
        })
        .collect();
    for h in handles {
        let (got, second) = h.join().unwrap();
        assert_eq!(got, (0..size).map(|r| format!("host{r}:{}", 5000 + r)).collect::<Vec<_>>());
        assert_eq!(second, (0..size).map(|r| (r * 10).to_string()).collect::<Vec<_>>());
    }
}

fn events_until(rx: &Receiver<ServerEvent>, n: usize) -> Vec<ServerEvent> {
    (0..n).map(|_| rx.recv_timeout(T).expect("expected a server event")).collect()
}

#[test]
fn ranks_exchange_over_a_unix_socket() {
    let path = sock_path("unix");
    let (server, rx) = start(BootstrapAddr::Unix(path.clone()), 4, T);
    assert_eq!(server.address(), format!("unix:{}", path.display()));
    exchange(server.address(), 4);
    let ev = events_until(&rx, 8);
    for r in 0..4 {
        assert!(ev.contains(&ServerEvent::Connected { rank: r }));
        assert!(ev.contains(&ServerEvent::Finalized { rank: r }));
    }
    assert_eq!(server.finalized(), vec![0, 1, 2, 3]);
    drop(server);
    assert!(!path.exists(), "the socket file is removed when the service stops");
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

#[test]
fn ranks_exchange_over_tcp_loopback() {
    let (server, _rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 3, T);
    assert!(server.address().starts_with("tcp:127.0.0.1:"));
    exchange(server.address(), 3);
}

#[test]
fn wrong_secret_is_refused_and_the_job_goes_on() {
    let (server, rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 2, T);
    let bad = Client::connect_to(server.address(), 0, 2, &[0x11; 32], T);
    assert!(matches!(bad, Err(BootstrapError::Refused(ref m)) if m.contains("wrong proof")), "{:?}", bad.err());
    assert!(matches!(rx.recv_timeout(T), Ok(ServerEvent::Refused { .. })));
    let out_of_range = Client::connect_to(server.address(), 2, 2, &SECRET, T);
    assert!(matches!(out_of_range, Err(BootstrapError::Refused(_))));
    exchange(server.address(), 2);
}

#[test]
fn garbage_and_silence_are_refused_without_harm() {
    let (server, rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 1, T);
    let port = server.address().rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let mut junk = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    junk.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut lines = BufReader::new(junk.try_clone().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("wanmpi-kv 2 "));
    assert_eq!(lines.next().unwrap().unwrap(), "err expected hello");
    let silent = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    // Both are refused: the garbage at once, the silent one after hello_timeout.
    let ev = events_until(&rx, 2);
    assert!(ev.iter().all(|e| matches!(e, ServerEvent::Refused { .. })), "{ev:?}");
    assert!(ev.iter().any(|e| matches!(e, ServerEvent::Refused { reason, .. } if reason.contains("no hello"))), "{ev:?}");
    drop(silent);
    exchange(server.address(), 1);
}

#[test]
fn fence_times_out_naming_the_missing_ranks() {
    let (server, rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 3, Duration::from_millis(300));
    let mut c0 = Client::connect_to(server.address(), 0, 3, &SECRET, T).unwrap();
    let _c1 = Client::connect_to(server.address(), 1, 3, &SECRET, T).unwrap();
    let started = Instant::now();
    let err = c0.fence().unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(&err, BootstrapError::Timeout(_, m) if m.contains("ranks not there: 1,2")), "{err}");
    let ev = events_until(&rx, 3);
    assert!(ev.contains(&ServerEvent::FenceTimeout { rank: 0, missing: vec![1, 2] }), "{ev:?}");
}

#[test]
fn abort_and_lost_peers_reach_the_launcher() {
    let (server, rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 2, T);
    let mut c = Client::connect_to(server.address(), 1, 2, &SECRET, T).unwrap();
    c.report_peer_lost(0, "connection reset by peer").unwrap();
    c.abort(17, "input file\nmissing").unwrap();
    let ev = events_until(&rx, 3);
    assert_eq!(ev[0], ServerEvent::Connected { rank: 1 });
    assert_eq!(ev[1], ServerEvent::PeerLost { reporter: 1, rank: 0, reason: "connection reset by peer".into() });
    assert_eq!(ev[2], ServerEvent::Abort { rank: 1, code: 17, message: "input file missing".into() });
}

#[test]
fn shutdown_releases_a_waiting_fence() {
    let (mut server, rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 2, Duration::from_secs(60));
    let address = server.address().to_string();
    let waiter = std::thread::spawn(move || {
        let mut c = Client::connect_to(&address, 0, 2, &SECRET, T).unwrap();
        let started = Instant::now();
        (c.fence(), started.elapsed())
    });
    // Once the rank is connected, end the job under it; whether its fence
    // request arrived before or after, it must fail promptly.
    assert_eq!(rx.recv_timeout(T), Ok(ServerEvent::Connected { rank: 0 }));
    server.shutdown();
    let (res, took) = waiter.join().unwrap();
    assert!(res.is_err());
    assert!(took < Duration::from_secs(10));
}

#[test]
fn a_fake_service_cannot_pass_as_the_launcher() {
    // A service that knows another secret cannot prove ours.
    let (tx, _rx) = channel();
    let tx = std::sync::Mutex::new(tx);
    let cfg = ServerConfig::new(1, [0x33; 32]);
    let fake = Server::start(
        &BootstrapAddr::Tcp("127.0.0.1".into(), 0),
        cfg,
        Box::new(move |e| {
            let _ = tx.lock().unwrap().send(e);
        }),
    )
    .unwrap();
    assert!(Client::connect_to(fake.address(), 0, 1, &SECRET, T).is_err());
}

/// The service tells a rank the source address it sees (its reflexive
/// candidate) over TCP, and nothing over a Unix socket.
#[test]
fn the_service_says_where_a_rank_connects_from() {
    let (server, _rx) = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0), 1, T);
    let mut c = Client::connect_to(server.address(), 0, 1, &SECRET, T).unwrap();
    assert_eq!(c.seen_from(), Some("127.0.0.1".parse().unwrap()));
    // Asked once: the second call needs no round trip and agrees.
    assert_eq!(c.seen_from(), Some("127.0.0.1".parse().unwrap()));
    let c_list = wanmpi_bootstrap::candidates::gather_here(|_| None, &mut c).unwrap();
    assert!(c_list.0.iter().any(|x| x.kind == wanmpi_bootstrap::CandidateKind::Loopback), "{c_list:?}");
    c.fence().unwrap();
    let path = sock_path("whoami");
    let (server, _rx) = start(BootstrapAddr::Unix(path), 1, T);
    let mut c = Client::connect_to(server.address(), 0, 1, &SECRET, T).unwrap();
    assert_eq!(c.seen_from(), None);
    c.fence().unwrap();
}
