//! sctp across what a NAT does, over real UDP sockets on 127.0.0.1, ranks
//! as threads: a peer whose published address is dead is reached at its
//! other candidate (hole punching: both sides probe every candidate, the
//! first sealed datagram points the link at its source); a peer none of
//! whose candidates answers fails setup within the punch timeout, naming
//! ranks and candidates; and a NAT rebinding mid-job (a UDP relay that
//! moves rank 0's traffic to a new outer port and drops the old one) is
//! followed with every frame delivered once, in order.

mod common;
use common::*;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, BootstrapError, KeyValue, LocalKv};
use wanmpi_transport::Transport;
use wanmpi_transport_sctp::{SctpOptions, SctpTransport, Seal};

/// How a rank is shown its peers' endpoints: `(its rank, value) -> value`.
type Rewrite = Arc<dyn Fn(u32, &str) -> String + Send + Sync>;

/// Shows a rank its peers' endpoints through `rewrite`.
struct RewriteKv {
    inner: LocalKv,
    rewrite: Rewrite,
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
        Ok(if k.starts_with("sctp-ep-") { (self.rewrite)(self.inner.rank(), &v) } else { v })
    }
}

fn dead_addr() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// "PRIMARY/port/mode" -> "NEW/port/mode[/CANDS]".
fn endpoint_with(v: &str, primary: &str, cands: &[String]) -> String {
    let (_, rest) = v.split_once('/').unwrap();
    let mut out = format!("{primary}/{rest}");
    if !cands.is_empty() {
        out = format!("{out}/{}", cands.join(","));
    }
    out
}

fn connect_all(opts: SctpOptions, rewrite: Rewrite) -> Vec<Result<SctpTransport, String>> {
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|inner| {
            let (o, rw) = (opts.clone(), rewrite.clone());
            std::thread::spawn(move || SctpTransport::connect(&mut RewriteKv { inner, rewrite: rw }, SECRET, o).map_err(|e| e.to_string()))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn sealed_opts() -> SctpOptions {
    SctpOptions { seal: Seal::Always, ..test_opts(2) }
}

#[test]
fn a_dead_published_address_is_passed_by_punching_the_reflexive_one() {
    let dead = dead_addr().to_string();
    let rw: Rewrite = Arc::new(move |_, v: &str| {
        let real = v.split('/').next().unwrap().to_string();
        endpoint_with(v, &dead, &[real])
    });
    let mut t: Vec<SctpTransport> = connect_all(sealed_opts(), rw).into_iter().map(|r| r.expect("connect")).collect();
    for r in 0..2u32 {
        let (addr, rebinds) = t[r as usize].peer_addr(1 - r).unwrap();
        assert_eq!(addr.port(), t[1 - r as usize].local_addrs().unwrap()[0].port(), "rank {r} found its peer's real socket");
        assert_eq!(rebinds, 0);
    }
    let b = t.pop().unwrap();
    let mut a = t.pop().unwrap();
    let h = std::thread::spawn(move || {
        let mut b = b;
        let got = recv_n(&mut b, 3, Duration::from_secs(20));
        drain(&mut b);
        (b, got)
    });
    for seq in 0..3 {
        send(&mut a, 1, 0, &frame(0, 0, seq, 5000));
    }
    drain(&mut a);
    let (b, got) = h.join().unwrap();
    assert_eq!(got.iter().map(|g| seq_of(&g.bytes)).collect::<Vec<_>>(), vec![0, 1, 2]);
    let hs: Vec<_> = [a, b].into_iter().map(|mut t| std::thread::spawn(move || t.shutdown(Duration::from_secs(5)))).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}

#[test]
fn no_answering_candidate_fails_fast_naming_ranks_and_candidates() {
    let dead: Vec<[String; 2]> = (0..2).map(|_| [dead_addr().to_string(), dead_addr().to_string()]).collect();
    let d2 = dead.clone();
    let rw: Rewrite = Arc::new(move |me: u32, v: &str| endpoint_with(v, &d2[me as usize][0], std::slice::from_ref(&d2[me as usize][1])));
    let start = Instant::now();
    let r = connect_all(SctpOptions { punch_timeout: Duration::from_millis(1500), ..sealed_opts() }, rw);
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    for (rank, x) in r.into_iter().enumerate() {
        let e = x.err().expect("no path: setup must fail");
        assert!(e.contains(&format!("no path from rank {rank} to ranks [{}]", 1 - rank)), "{e}");
        for d in &dead[rank] {
            assert!(e.contains(d.as_str()), "names the candidate {d}: {e}");
        }
    }
}

/// A NAT in front of rank 0, as a UDP relay: rank 0 sends to `inner`, and
/// the relay passes it on to rank 1 from its outer socket; what rank 1
/// sends to that outer socket goes back to rank 0. `rebind` moves rank
/// 0's traffic to the second outer socket; the first then drops all.
struct Relay {
    inner: SocketAddr,
    outer: [SocketAddr; 2],
    rebind: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    fn start(rank0: Arc<std::sync::Mutex<Option<SocketAddr>>>, rank1: Arc<std::sync::Mutex<Option<SocketAddr>>>) -> Relay {
        let bind = || {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_nonblocking(true).unwrap();
            s
        };
        let (inner, o1, o2) = (bind(), bind(), bind());
        let addrs = (inner.local_addr().unwrap(), [o1.local_addr().unwrap(), o2.local_addr().unwrap()]);
        let rebind = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (rb, st) = (rebind.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            let deadline = Instant::now() + Duration::from_secs(120);
            while !st.load(Ordering::Relaxed) && Instant::now() < deadline {
                let mut idle = true;
                let (r0, r1) = (*rank0.lock().unwrap(), *rank1.lock().unwrap());
                let outer = if rb.load(Ordering::Relaxed) { &o2 } else { &o1 };
                while let Ok((n, _)) = inner.recv_from(&mut buf) {
                    idle = false;
                    if let Some(r1) = r1 {
                        let _ = outer.send_to(&buf[..n], r1);
                    }
                }
                for (i, o) in [&o1, &o2].into_iter().enumerate() {
                    while let Ok((n, _)) = o.recv_from(&mut buf) {
                        idle = false;
                        // The old mapping is gone after a rebinding.
                        let live = (i == 1) == rb.load(Ordering::Relaxed);
                        if let (true, Some(r0)) = (live, r0) {
                            let _ = inner.send_to(&buf[..n], r0);
                        }
                    }
                }
                if idle {
                    let mut fds =
                        [&inner, &o1, &o2].map(|s| libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(s), events: libc::POLLIN, revents: 0 });
                    // SAFETY: three pollfds on our own sockets.
                    unsafe { libc::poll(fds.as_mut_ptr(), 3, 5) };
                }
            }
        });
        Relay { inner: addrs.0, outer: addrs.1, rebind, stop, thread: Some(thread) }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_nat_rebinding_mid_job_is_followed_with_nothing_lost_or_duplicated() {
    const N: u32 = 400;
    let real: [Arc<std::sync::Mutex<Option<SocketAddr>>>; 2] = Default::default();
    let relay = Relay::start(real[0].clone(), real[1].clone());
    let (inner, outer0, rebind) = (relay.inner.to_string(), relay.outer[0].to_string(), relay.rebind.clone());
    let real2 = real.clone();
    // Rank 0 reaches rank 1 through the relay's inner side; rank 1 sees
    // rank 0 at the relay's first outer port.
    let rw: Rewrite = Arc::new(move |me: u32, v: &str| {
        let other = 1 - me as usize;
        *real2[other].lock().unwrap() = Some(v.split('/').next().unwrap().parse().unwrap());
        endpoint_with(v, if me == 0 { &inner } else { &outer0 }, &[])
    });
    let mut t: Vec<SctpTransport> = connect_all(sealed_opts(), rw).into_iter().map(|r| r.expect("connect")).collect();
    let b = t.pop().unwrap();
    let mut a = t.pop().unwrap();
    let h = std::thread::spawn(move || {
        let mut b = b;
        let got = recv_n(&mut b, N as usize, Duration::from_secs(60));
        drain(&mut b);
        let moved = b.peer_addr(0).unwrap();
        (b, got, moved)
    });
    for seq in 0..N {
        if seq == N / 2 {
            rebind.store(true, Ordering::Relaxed);
        }
        send(&mut a, 1, (seq % 2) as u16, &frame(0, (seq % 2) as u16, seq, 3000));
        if seq % 20 == 0 {
            a.wait(Duration::from_millis(5)).unwrap();
            a.poll_recv(&mut |_| {}).unwrap();
        }
    }
    drain(&mut a);
    let (b, got, moved) = h.join().unwrap();
    assert_eq!(moved, (relay.outer[1], 1), "rank 1 follows rank 0 to the new outer port, once");
    for ch in 0..2u16 {
        let seqs: Vec<u32> = got.iter().filter(|g| g.channel == ch).map(|g| seq_of(&g.bytes)).collect();
        let want: Vec<u32> = (0..N).filter(|s| s % 2 == ch as u32).collect();
        assert_eq!(seqs, want, "stream {ch}: every frame once, in order");
    }
    for g in &got {
        assert_eq!(g.bytes, frame(0, g.channel, seq_of(&g.bytes), 3000));
    }
    let hs: Vec<_> = [a, b].into_iter().map(|mut t| std::thread::spawn(move || t.shutdown(Duration::from_secs(5)))).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}
