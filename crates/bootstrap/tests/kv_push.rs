//! Lines the service pushes to ranks: deaths the launcher reports, ULFM
//! agreements it decides (also when a member dies during one), revokes it
//! relays; over TCP (sealed) and a Unix socket, with replies interleaved.

use std::time::{Duration, Instant};
use wanmpi_bootstrap::{BootstrapAddr, Client, KeyValue, Push, Server, ServerConfig};

const SECRET: [u8; 32] = [0x33; 32];
const T: Duration = Duration::from_secs(10);

fn start(bind: BootstrapAddr, size: u32) -> Server {
    let mut cfg = ServerConfig::new(size, SECRET);
    cfg.hello_timeout = Duration::from_secs(2);
    Server::start(&bind, cfg, Box::new(|_| {})).unwrap()
}

fn connect(server: &Server, size: u32) -> Vec<Client> {
    (0..size).map(|r| Client::connect_to(server.address(), r, size, &SECRET, T).unwrap()).collect()
}

/// Polls `c` until `n` pushes came, within 5 s.
fn pushes(c: &mut Client, n: usize) -> Vec<Push> {
    let until = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(Instant::now() < until, "only {got:?} of {n} pushes came");
        got.extend(c.poll_pushes());
        std::thread::yield_now();
    }
    got
}

fn agreed(p: &Push) -> (Vec<u8>, Vec<u32>, bool) {
    match p {
        Push::Agreed { value, dead, uniform, .. } => (value.clone(), dead.clone(), *uniform),
        other => panic!("not an agreement: {other:?}"),
    }
}

#[test]
fn pushes_reach_ranks_over_tcp_and_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("wanmpi-kv-push-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for bind in [BootstrapAddr::Tcp("127.0.0.1".into(), 0), BootstrapAddr::Unix(dir.join("kv.sock"))] {
        run(bind);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn run(bind: BootstrapAddr) {
    let server = start(bind, 4);
    let mut c = connect(&server, 4);
    assert!(c[0].poll_pushes().is_empty());
    c[0].agree_start("2.0", vec![0, 1, 2, 3], vec![], vec![0x0f, 0xff]).unwrap();
    c[1].agree_start("2.0", vec![0, 1, 2, 3], vec![], vec![0xfc, 0x01]).unwrap();
    c[2].agree_start("2.0", vec![0, 1, 2, 3], vec![], vec![0xff, 0xff]).unwrap();
    // A reply read meanwhile is still the reply.
    c[0].put("a", "1").unwrap();
    assert!(c[1].get("nothing").is_err());
    assert!(c[0].poll_pushes().is_empty(), "decided without rank 3");
    server.deaths().died(3, "rank 3 on host h3 (pid 99) was killed by signal 9 (SIGKILL)");
    for cl in c.iter_mut().take(3) {
        let got = pushes(cl, 2);
        assert_eq!(got[0], Push::Dead { rank: 3, reason: "rank 3 on host h3 (pid 99) was killed by signal 9 (SIGKILL)".into() });
        assert_eq!(agreed(&got[1]), (vec![0x0c, 0x01], vec![3], false));
    }
    // Acknowledged, the next one is clean; a get's reply in between.
    for (r, cl) in c.iter_mut().take(3).enumerate() {
        cl.agree_start("2.1", vec![0, 1, 2, 3], vec![3], vec![(1u8 << r) | 0x80]).unwrap();
    }
    assert!(c[2].get("nothing").is_err(), "a reply after the push");
    for cl in c.iter_mut().take(3) {
        assert_eq!(agreed(&pushes(cl, 1)[0]), (vec![0x80], vec![3], true));
    }
    // A revoke reaches the other members only.
    c[1].revoke("5.0a.0", vec![0, 1]).unwrap();
    assert_eq!(pushes(&mut c[0], 1), vec![Push::Revoked { id: "5.0a.0".into() }]);
    assert!(c[1].get("nothing").is_err(), "the revoke was handled before this reply");
    server.deaths().died(0, "rank 0 exited with code 3");
    for cl in c.iter_mut().skip(1).take(2) {
        assert!(matches!(&pushes(cl, 1)[..], [Push::Dead { rank: 0, .. }]), "no revoke for the sender or a non-member");
    }
    // A rank connecting after a death hears of it.
    drop(c);
    let mut late = Client::connect_to(server.address(), 2, 4, &SECRET, T).unwrap();
    let heard: Vec<u32> = pushes(&mut late, 2).iter().filter_map(|p| if let Push::Dead { rank, .. } = p { Some(*rank) } else { None }).collect();
    assert_eq!(heard, vec![0, 3]);
}
