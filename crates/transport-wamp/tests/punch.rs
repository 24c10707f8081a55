//! Candidates and hole punching over real UDP sockets on 127.0.0.1, ranks
//! as threads: a peer whose first published candidate is dead is reached
//! at the next one (the handshake goes to all at once, the first sealed
//! answer wins), and a peer none of whose candidates answers fails setup
//! within the punch timeout, naming the ranks and the candidates tried.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, BootstrapError, KeyValue, LocalKv};
use wanmpi_transport::{Incoming, SendStatus, Transport, TransportError};
use wanmpi_transport_wamp::{WampOptions, WampTransport};

const SECRET: [u8; 32] = [0x44; 32];

/// A loopback address where nothing listens (a socket bound and closed).
fn dead_addr() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// Shows each rank the other's candidates with `dead` ones in front (and,
/// unless `keep_real`, without the real one), as a NAT would: a published
/// address that does not answer.
struct RewriteKv {
    inner: LocalKv,
    dead: Vec<SocketAddr>,
    keep_real: bool,
}

impl KeyValue for RewriteKv {
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn put(&mut self, k: &str, v: &str) -> Result<(), BootstrapError> {
        self.inner.put(k, v)
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.inner.fence()
    }
    fn get(&mut self, k: &str) -> Result<String, BootstrapError> {
        let v = self.inner.get(k)?;
        let (real, nonce) = v.split_once('/').unwrap();
        let mut list: Vec<String> = self.dead.iter().map(|a| a.to_string()).collect();
        if self.keep_real {
            list.push(real.to_string());
        }
        Ok(format!("{}/{nonce}", list.join(",")))
    }
}

fn connect_all(kvs: Vec<RewriteKv>, opts: WampOptions) -> Vec<Result<WampTransport, TransportError>> {
    let hs: Vec<_> = kvs
        .into_iter()
        .map(|mut kv| {
            let o = opts.clone();
            std::thread::spawn(move || WampTransport::connect(&mut kv, SECRET, o))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn world(dead: usize, keep_real: bool) -> Vec<RewriteKv> {
    local_kv_world(2).into_iter().map(|inner| RewriteKv { inner, dead: (0..dead).map(|_| dead_addr()).collect(), keep_real }).collect()
}

/// One frame from `from` to `to`, as `to` received it (within 10 s).
fn pass(from: &mut WampTransport, to: &mut WampTransport) -> Option<Vec<u8>> {
    assert!(matches!(from.try_send(to.rank(), 0, &[b"across"]).unwrap(), SendStatus::Sent));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = None;
    while got.is_none() && Instant::now() < deadline {
        from.poll_recv(&mut |_| {}).unwrap();
        to.poll_recv(&mut |ev| {
            if let Incoming::Frame { bytes, .. } = ev {
                got = Some(bytes.to_vec());
            }
        })
        .unwrap();
        to.wait(Duration::from_millis(5)).unwrap();
    }
    got
}

#[test]
fn the_first_candidate_that_answers_wins() {
    let o = WampOptions { setup_timeout: Duration::from_secs(20), ..WampOptions::default() };
    let mut t: Vec<WampTransport> = connect_all(world(2, true), o).into_iter().map(Result::unwrap).collect();
    for r in 0..2u32 {
        let (addr, rebinds) = t[r as usize].peer_addr(1 - r).unwrap();
        assert_eq!(addr, t[1 - r as usize].local_addr().unwrap(), "rank {r} talks to its peer's real socket");
        assert_eq!(rebinds, 0, "finding the path is no rebinding");
    }
    // And frames pass both ways.
    let (a, b) = t.split_at_mut(1);
    assert_eq!(pass(&mut a[0], &mut b[0]).as_deref(), Some(&b"across"[..]));
    assert_eq!(pass(&mut b[0], &mut a[0]).as_deref(), Some(&b"across"[..]));
    let hs: Vec<_> = t.into_iter().map(|mut t| std::thread::spawn(move || t.shutdown(Duration::from_secs(5)))).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}

#[test]
fn no_answering_candidate_fails_fast_naming_ranks_and_candidates() {
    let o = WampOptions { setup_timeout: Duration::from_secs(30), punch_timeout: Duration::from_millis(1500), ..WampOptions::default() };
    let start = Instant::now();
    let kvs = world(2, false);
    let dead: Vec<Vec<SocketAddr>> = kvs.iter().map(|k| k.dead.clone()).collect();
    let r = connect_all(kvs, o);
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    for (rank, x) in r.into_iter().enumerate() {
        let e = x.err().expect("no path: setup must fail").to_string();
        assert!(e.contains(&format!("no path from rank {rank} to rank {}", 1 - rank)), "{e}");
        for d in &dead[rank] {
            assert!(e.contains(&d.to_string()), "names the candidate {d}: {e}");
        }
    }
}
