//! The wamp transport over real UDP sockets on 127.0.0.1, ranks as threads:
//! frames in channel order under injected loss, hostile datagrams (garbage,
//! truncated, forged, tampered, replayed) dropped and counted with nothing
//! lost, a wrong job secret failing setup by name, and a silent peer
//! reported lost.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, BootstrapError, KeyValue, LocalKv};
use wanmpi_transport::{Incoming, SendStatus, Transport, TransportError};
use wanmpi_transport_wamp::{WampOptions, WampTransport};

const SECRET: [u8; 32] = [0x33; 32];

fn opts() -> WampOptions {
    WampOptions { setup_timeout: Duration::from_secs(10), ..WampOptions::default() }
}

fn connect_all<K: KeyValue + Send + 'static>(
    kvs: Vec<K>,
    secret_of: impl Fn(u32) -> [u8; 32],
    opts: WampOptions,
) -> Vec<Result<WampTransport, TransportError>> {
    let hs: Vec<_> = kvs
        .into_iter()
        .map(|mut kv| {
            let (s, o) = (secret_of(kv.rank()), opts.clone());
            std::thread::spawn(move || WampTransport::connect(&mut kv, s, o))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Closes every transport at once, as ranks do (a close waits for the peer's).
fn shutdown_all<T: Transport + 'static>(ts: Vec<T>) {
    let hs: Vec<_> = ts.into_iter().map(|mut t| std::thread::spawn(move || t.shutdown(Duration::from_secs(5)))).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}

fn frame(seq: u32, len: usize) -> Vec<u8> {
    let mut f = seq.to_le_bytes().to_vec();
    f.extend((4..len).map(|i| (i as u32).wrapping_mul(7).wrapping_add(seq) as u8));
    f
}

/// Sends `n` frames from `a` to `b` spread over `channels`, pumping both,
/// and returns what `b` received, within `limit`.
fn exchange(a: &mut WampTransport, b: &mut WampTransport, n: u32, channels: u16, limit: Duration) -> Vec<(u16, Vec<u8>)> {
    let (to, start) = (b.rank(), Instant::now());
    let mut got = vec![];
    let mut next = 0;
    while (got.len() as u32) < n && start.elapsed() < limit {
        while next < n {
            let f = frame(next, 1 + (next as usize * 7919) % 200_000);
            match a.try_send(to, (next % channels as u32) as u16, &[&f]).unwrap() {
                SendStatus::Sent => next += 1,
                SendStatus::WouldBlock => break,
            }
        }
        a.poll_recv(&mut |_| {}).unwrap();
        b.poll_recv(&mut |ev| {
            if let Incoming::Frame { channel, bytes, .. } = ev {
                got.push((channel, bytes.to_vec()));
            }
        })
        .unwrap();
        b.wait(Duration::from_millis(1)).unwrap();
    }
    got
}

fn check_order(got: &[(u16, Vec<u8>)], n: u32, channels: u16) {
    assert_eq!(got.len() as u32, n, "every frame once");
    for ch in 0..channels {
        let seqs: Vec<u32> = got.iter().filter(|f| f.0 == ch).map(|f| u32::from_le_bytes(f.1[..4].try_into().unwrap())).collect();
        let want: Vec<u32> = (0..n).filter(|s| s % channels as u32 == ch as u32).collect();
        assert_eq!(seqs, want, "channel {ch} in order");
    }
    for (_, f) in got {
        let seq = u32::from_le_bytes(f[..4].try_into().unwrap());
        assert_eq!(f, &frame(seq, f.len()), "content of frame {seq}");
    }
}

#[test]
fn frames_in_channel_order_with_injected_loss() {
    for drop_rate in [0.0, 0.05] {
        let o = WampOptions { drop_rate, drop_seed: 3, ..opts() };
        let mut t: Vec<_> = connect_all(local_kv_world(2), |_| SECRET, o).into_iter().map(Result::unwrap).collect();
        let (a, b) = t.split_at_mut(1);
        let got = exchange(&mut a[0], &mut b[0], 300, 7, Duration::from_secs(30));
        check_order(&got, 300, 7);
        shutdown_all(t);
    }
}

/// Publishes the test's proxy as each rank's address to the other, so that
/// every datagram passes through it both ways (a peer's address follows
/// its newest packet, so a proxy on one direction only would be bypassed).
struct ProxyKv {
    inner: LocalKv,
    proxy: SocketAddr,
    real: Arc<Mutex<[Option<SocketAddr>; 2]>>,
}

impl KeyValue for ProxyKv {
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
        let other = 1 - self.inner.rank() as usize;
        if k != format!("wamp-ep-{other}") {
            return Ok(v);
        }
        let (addr, nonce) = v.split_once('/').unwrap();
        self.real.lock().unwrap()[other] = Some(addr.parse().unwrap());
        Ok(format!("{}/{nonce}", self.proxy))
    }
}

#[test]
fn hostile_datagrams_are_dropped_and_counted_and_nothing_is_lost() {
    let proxy = UdpSocket::bind("127.0.0.1:0").unwrap();
    proxy.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let real = Arc::new(Mutex::new([None, None]));
    let kvs: Vec<ProxyKv> =
        local_kv_world(2).into_iter().map(|inner| ProxyKv { inner, proxy: proxy.local_addr().unwrap(), real: real.clone() }).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (stop2, real2) = (stop.clone(), real.clone());
    // The proxy relays both ways; rank 0's datagrams to rank 1 with, besides:
    // a replay of each, a copy with one byte flipped, a truncated copy, and
    // some garbage. Datagrams that come before both ranks' addresses are
    // known wait for them: a handshake dropped there could leave a rank's
    // ping for a peer whose `connect` already returned, which nobody pumps.
    let mitm = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut early: Vec<(Vec<u8>, SocketAddr)> = vec![];
        let mut n_seen = 0u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !stop2.load(Ordering::Relaxed) && Instant::now() < deadline {
            let got = proxy.recv_from(&mut buf).ok().map(|(n, from)| (buf[..n].to_vec(), from));
            let [Some(r0), Some(r1)] = *real2.lock().unwrap() else {
                early.extend(got);
                continue;
            };
            for (d, from) in early.drain(..).chain(got) {
                let n = d.len();
                let d = &d[..];
                if from == r1 {
                    let _ = proxy.send_to(d, r0);
                    continue;
                }
                let to = r1;
                let _ = proxy.send_to(d, to);
                n_seen += 1;
                if n_seen.is_multiple_of(3) {
                    let _ = proxy.send_to(d, to);
                    let mut t = d.to_vec();
                    let i = (n_seen as usize * 13) % n;
                    t[i] ^= 0x40;
                    let _ = proxy.send_to(&t, to);
                    let _ = proxy.send_to(&d[..n / 2], to);
                    let _ = proxy.send_to(b"garbage that is not wamp", to);
                }
            }
        }
    });
    let mut t: Vec<_> = connect_all(kvs, |_| SECRET, opts()).into_iter().map(Result::unwrap).collect();
    let (a, b) = t.split_at_mut(1);
    let got = exchange(&mut a[0], &mut b[0], 200, 3, Duration::from_secs(30));
    check_order(&got, 200, 3);
    let r = b[0].refusals();
    println!("{r:?}");
    assert!(r.duplicates > 0, "replays refused: {r:?}");
    assert!(r.forged > 0, "tampered and truncated copies refused: {r:?}");
    assert!(r.strays > 0, "garbage refused: {r:?}");
    // The CLOSEs pass through the proxy too.
    shutdown_all(t);
    stop.store(true, Ordering::Relaxed);
    mitm.join().unwrap();
}

#[test]
fn a_wrong_secret_fails_setup_naming_the_silent_rank() {
    let o = WampOptions { setup_timeout: Duration::from_millis(800), ..opts() };
    let r = connect_all(local_kv_world(2), |rank| if rank == 1 { [9; 32] } else { SECRET }, o);
    for (rank, x) in r.into_iter().enumerate() {
        let e = x.err().expect("setup must fail").to_string();
        assert!(e.contains(&format!("[{}]", 1 - rank)), "rank {rank}: {e}");
    }
}

#[test]
fn a_silent_peer_is_reported_lost() {
    let o = WampOptions { peer_timeout: Duration::from_millis(600), keepalive: Duration::from_millis(100), ..opts() };
    let mut t: Vec<_> = connect_all(local_kv_world(2), |_| SECRET, o).into_iter().map(Result::unwrap).collect();
    let b = t.pop().unwrap();
    drop(b); // gone without a word, like a killed process
    let mut a = t.pop().unwrap();
    a.try_send(1, 0, &[b"hello?"]).unwrap();
    let start = Instant::now();
    let mut lost = None;
    while lost.is_none() && start.elapsed() < Duration::from_secs(10) {
        a.poll_recv(&mut |ev| {
            if let Incoming::PeerLost { peer, reason } = ev {
                lost = Some((peer, reason));
            }
        })
        .unwrap();
        a.wait(Duration::from_millis(20)).unwrap();
    }
    let (peer, reason) = lost.expect("peer lost within 10 s");
    assert_eq!(peer, 1);
    assert!(start.elapsed() >= Duration::from_millis(500), "not before the timeout: {reason}");
    assert!(matches!(a.try_send(1, 0, &[b"x"]), Err(TransportError::PeerLost { .. })));
}

/// A NAT rebinding: rank 1's datagrams start coming from another port and
/// its old one is gone. Rank 0 follows the first sealed packet from there;
/// everything arrives once and in order both ways.
#[test]
fn a_peer_whose_address_changes_is_followed() {
    let mut t: Vec<_> = connect_all(local_kv_world(2), |_| SECRET, opts()).into_iter().map(Result::unwrap).collect();
    let (a, b) = t.split_at_mut(1);
    let (a, b) = (&mut a[0], &mut b[0]);
    check_order(&exchange(a, b, 40, 3, Duration::from_secs(20)), 40, 3);
    let old = b.local_addr().unwrap();
    let new = b.move_to_new_port().unwrap();
    assert_ne!(old, new);
    // The host behind the NAT speaks first from its new mapping ...
    check_order(&exchange(b, a, 40, 3, Duration::from_secs(20)), 40, 3);
    // ... and what rank 0 sends goes there (before: to the dead port).
    check_order(&exchange(a, b, 200, 3, Duration::from_secs(20)), 200, 3);
    assert_eq!(a.peer_addr(1), Some((new, 1)));
    assert_eq!(b.peer_addr(0).map(|(_, moved)| moved), Some(0));
    shutdown_all(t);
}
