//! The reflector: a STUN-like UDP service beside mpirun's key/value service
//! that tells a rank the address and port its datagrams come from, as the
//! network between them rewrote them (a NAT's public mapping). A rank asks
//! from its transport's own UDP socket (wamp's, sctp's) and publishes the
//! answer as a reflexive candidate: a peer that sends there reaches the
//! rank through its NAT once the rank has sent toward the peer (hole
//! punching, in the transports).
//!
//! Only the job's ranks get answers: a request carries an HMAC under a key
//! derived from the job secret (`auth::derive`), and the answer carries one
//! too, so a rank never publishes an address a stranger made up. A request
//! is never smaller than its answer and each request's nonce is answered
//! once, so the reflector cannot be used to amplify or repeat traffic
//! toward a forged source.
//!
//! Request (`REQUEST_LEN` bytes): magic `WMRQ` | version | rank (u32 BE) |
//! nonce (16) | zero padding | HMAC-SHA256 over everything before it.
//! Answer (`ANSWER_LEN`): magic `WMRA` | version | nonce (16) | family (4
//! or 6) | address (16, an IPv4 one in the first 4) | port (u16 BE) |
//! HMAC-SHA256 over everything before it.
//!
//! The service listens on the UDP port with the same number as the
//! key/value service's TCP port (`Server::start`), so a rank finds it from
//! the address it already dials (`KeyValue::reflector`).
//!
//! Also here, for the UDP transports: `bind_udp` (the published address
//! when it is on an interface, else the wildcard: behind a 1:1 NAT the
//! published public address is on no interface) and `udp_candidates`
//! (where peers may reach a socket: the published address, then the
//! reflexive one).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::{HashSet, VecDeque};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use thiserror::Error;

type HmacSha256 = Hmac<Sha256>;

const REQUEST_MAGIC: &[u8; 4] = b"WMRQ";
const ANSWER_MAGIC: &[u8; 4] = b"WMRA";
const VERSION: u8 = 1;
const NONCE_LEN: usize = 16;
const MAC_LEN: usize = 32;
/// Bytes of an answer: magic, version, nonce, family, address, port, MAC.
pub const ANSWER_LEN: usize = 4 + 1 + NONCE_LEN + 1 + 16 + 2 + MAC_LEN;
/// Bytes of a request: padded to the answer's size, so no reflection is
/// larger than what provoked it.
pub const REQUEST_LEN: usize = ANSWER_LEN;
/// Nonces remembered to refuse a replayed request.
const SEEN_NONCES: usize = 4096;
/// How often a rank repeats its request while no answer came (a lost
/// datagram), and how long it waits in all by default.
const RETRY: Duration = Duration::from_millis(200);
pub const ASK_TIMEOUT: Duration = Duration::from_millis(1000);

/// What went wrong asking the reflector (not its silence: that is `None`).
#[derive(Debug, Error)]
pub enum ReflectError {
    #[error("reflector request: {0}")]
    Io(#[from] std::io::Error),
    #[error("no randomness for a reflector nonce: {0}")]
    Random(String),
}

fn key(secret: &[u8; 32]) -> [u8; 32] {
    crate::auth::derive(secret, "udp-reflector-v1")
}

fn mac(key: &[u8; 32], body: &[u8]) -> HmacSha256 {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes a 32-byte key");
    m.update(body);
    m
}

/// A request from `rank` with `nonce`.
pub fn request(secret: &[u8; 32], rank: u32, nonce: &[u8; NONCE_LEN]) -> [u8; REQUEST_LEN] {
    let mut b = [0u8; REQUEST_LEN];
    b[..4].copy_from_slice(REQUEST_MAGIC);
    b[4] = VERSION;
    b[5..9].copy_from_slice(&rank.to_be_bytes());
    b[9..9 + NONCE_LEN].copy_from_slice(nonce);
    let body = REQUEST_LEN - MAC_LEN;
    let tag = mac(&key(secret), &b[..body]).finalize().into_bytes();
    b[body..].copy_from_slice(&tag);
    b
}

/// The nonce of an authentic request, or None (wrong length, magic,
/// version or MAC: not from a rank of this job).
pub fn check_request(secret: &[u8; 32], b: &[u8]) -> Option<[u8; NONCE_LEN]> {
    if b.len() != REQUEST_LEN || &b[..4] != REQUEST_MAGIC || b[4] != VERSION {
        return None;
    }
    let body = REQUEST_LEN - MAC_LEN;
    mac(&key(secret), &b[..body]).verify_slice(&b[body..]).ok()?;
    b[9..9 + NONCE_LEN].try_into().ok()
}

/// The answer to the request with `nonce` that came from `from`.
pub fn answer(secret: &[u8; 32], nonce: &[u8; NONCE_LEN], from: SocketAddr) -> [u8; ANSWER_LEN] {
    let mut b = [0u8; ANSWER_LEN];
    b[..4].copy_from_slice(ANSWER_MAGIC);
    b[4] = VERSION;
    b[5..5 + NONCE_LEN].copy_from_slice(nonce);
    let at = 5 + NONCE_LEN;
    // A v4 peer on a dual-stack socket shows as ::ffff:a.b.c.d.
    match from.ip().to_canonical() {
        IpAddr::V4(v4) => {
            b[at] = 4;
            b[at + 1..at + 5].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            b[at] = 6;
            b[at + 1..at + 17].copy_from_slice(&v6.octets());
        }
    }
    b[at + 17..at + 19].copy_from_slice(&from.port().to_be_bytes());
    let body = ANSWER_LEN - MAC_LEN;
    let tag = mac(&key(secret), &b[..body]).finalize().into_bytes();
    b[body..].copy_from_slice(&tag);
    b
}

/// The address an authentic answer to our request `nonce` names, or None.
pub fn read_answer(secret: &[u8; 32], nonce: &[u8; NONCE_LEN], b: &[u8]) -> Option<SocketAddr> {
    if b.len() != ANSWER_LEN || &b[..4] != ANSWER_MAGIC || b[4] != VERSION || &b[5..5 + NONCE_LEN] != nonce {
        return None;
    }
    let body = ANSWER_LEN - MAC_LEN;
    mac(&key(secret), &b[..body]).verify_slice(&b[body..]).ok()?;
    let at = 5 + NONCE_LEN;
    let ip = match b[at] {
        4 => IpAddr::V4(Ipv4Addr::new(b[at + 1], b[at + 2], b[at + 3], b[at + 4])),
        6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&b[at + 1..at + 17]).ok()?)),
        _ => return None,
    };
    Some(SocketAddr::new(ip, u16::from_be_bytes([b[at + 17], b[at + 18]])))
}

/// Asks the reflector at `server`, from `udp` (a transport's own socket,
/// blocking or not), where this socket's datagrams come from. Repeats the
/// request every 200 ms; None when no authentic answer came within
/// `timeout` (no reflector there, UDP blocked). Other datagrams read
/// meanwhile are dropped: call it before publishing the socket's address.
pub fn ask(udp: &UdpSocket, server: SocketAddr, secret: &[u8; 32], rank: u32, timeout: Duration) -> Result<Option<SocketAddr>, ReflectError> {
    let start = Instant::now();
    let mut nonces: Vec<[u8; NONCE_LEN]> = vec![];
    let mut buf = [0u8; 2 * ANSWER_LEN];
    let mut next_send = start;
    loop {
        let now = Instant::now();
        if now >= start + timeout {
            return Ok(None);
        }
        if now >= next_send {
            let mut n = [0u8; NONCE_LEN];
            getrandom::getrandom(&mut n).map_err(|e| ReflectError::Random(e.to_string()))?;
            nonces.push(n);
            match udp.send_to(&request(secret, rank, &n), server) {
                Ok(_) => {}
                // No route or a refusal now: the next try may pass.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::ConnectionRefused) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EPERM | libc::ENOBUFS)) => {}
                Err(e) => return Err(e.into()),
            }
            next_send = now + RETRY;
        }
        let wait = next_send.min(start + timeout).saturating_duration_since(Instant::now());
        if !readable(udp, wait)? {
            continue;
        }
        // Drain what arrived; the socket may be blocking, so only after poll.
        let was_nonblocking = set_nonblocking(udp, true)?;
        let found = loop {
            match udp.recv_from(&mut buf) {
                // The MAC, not the source, proves the answer.
                Ok((len, _)) => {
                    if let Some(a) = nonces.iter().find_map(|n| read_answer(secret, n, &buf[..len])) {
                        break Some(a);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break None,
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::ConnectionRefused) => {}
                Err(e) => {
                    set_nonblocking(udp, was_nonblocking)?;
                    return Err(e.into());
                }
            }
        };
        set_nonblocking(udp, was_nonblocking)?;
        if found.is_some() {
            return Ok(found);
        }
    }
}

/// Sets O_NONBLOCK; returns whether it was set before.
fn set_nonblocking(udp: &UdpSocket, on: bool) -> std::io::Result<bool> {
    let fd = udp.as_raw_fd();
    // SAFETY: fcntl on our own descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let was = flags & libc::O_NONBLOCK != 0;
    if was != on {
        udp.set_nonblocking(on)?;
    }
    Ok(was)
}

fn readable(udp: &UdpSocket, wait: Duration) -> std::io::Result<bool> {
    let mut p = libc::pollfd { fd: udp.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one pollfd on our own descriptor.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(n > 0)
}

/// Binds a UDP socket for a transport that publishes `publish`: on that
/// address when it is one of this host's, else on the wildcard of its
/// family (a 1:1 NAT's public address is on no interface: binding it
/// fails with "Cannot assign requested address"). Ports in `range`.
/// Returns the socket and whether it bound the wildcard.
pub fn bind_udp(publish: IpAddr, range: Option<crate::PortRange>) -> std::io::Result<(UdpSocket, bool)> {
    match crate::ports::bind_in(range, |port| UdpSocket::bind(SocketAddr::new(publish, port))) {
        Ok(s) => Ok((s, publish.is_unspecified())),
        Err(e) if e.kind() == ErrorKind::AddrNotAvailable => {
            let any: IpAddr = if publish.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() };
            Ok((crate::ports::bind_in(range, |port| UdpSocket::bind(SocketAddr::new(any, port)))?, true))
        }
        Err(e) => Err(e),
    }
}

/// Where peers may reach `udp`, best first: `publish` with the socket's
/// port, then the address the job's reflector saw it at (asked from this
/// socket, within `ASK_TIMEOUT`) when that differs: a NAT between. No
/// question is asked when the reflector or `publish` is a loopback address
/// (one host: nothing between), or there is no reflector.
pub fn udp_candidates(
    udp: &UdpSocket,
    publish: IpAddr,
    reflector: Option<SocketAddr>,
    secret: &[u8; 32],
    rank: u32,
) -> Result<Vec<SocketAddr>, ReflectError> {
    let first = SocketAddr::new(publish, udp.local_addr()?.port());
    let mut out = vec![first];
    let Some(server) = reflector.filter(|r| !r.ip().is_loopback() && !publish.is_loopback()) else { return Ok(out) };
    // The socket's family must match the reflector's: a v4 socket cannot
    // ask a v6 reflector.
    if server.is_ipv4() != udp.local_addr()?.is_ipv4() {
        return Ok(out);
    }
    if let Some(seen) = ask(udp, server, secret, rank, ASK_TIMEOUT)? {
        if seen != first {
            out.push(seen);
        }
    }
    Ok(out)
}

/// Adds this host's interface addresses (same family as `c[0]`, never
/// loopback or link-local) with `port` to `c`, up to 8 in all. For a rank
/// behind NAT: a peer behind the same NAT (a site behind one router)
/// reaches it only there, since few NATs hairpin.
pub fn add_host_candidates(c: &mut Vec<SocketAddr>, port: u16) {
    let Ok(ifs) = crate::route::interfaces() else { return };
    let v4 = c.first().is_none_or(|a| a.is_ipv4());
    for i in ifs {
        let ip = i.addr;
        let link_local = match ip {
            IpAddr::V4(a) => a.is_link_local(),
            IpAddr::V6(a) => (a.segments()[0] & 0xffc0) == 0xfe80,
        };
        let a = SocketAddr::new(ip, port);
        if c.len() < 8 && ip.is_ipv4() == v4 && !ip.is_loopback() && !link_local && !ip.is_unspecified() && !c.contains(&a) {
            c.push(a);
        }
    }
}

/// Candidates as published: `ip:port,ip:port`.
pub fn format_candidates(c: &[SocketAddr]) -> String {
    c.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")
}

/// The list `format_candidates` made; None if any is not an address, or
/// there are none or more than 8.
pub fn parse_candidates(s: &str) -> Option<Vec<SocketAddr>> {
    let v = s.split(',').map(|a| a.parse().ok()).collect::<Option<Vec<SocketAddr>>>()?;
    (!v.is_empty() && v.len() <= 8).then_some(v)
}

/// Counters of a running reflector.
#[derive(Debug, Default)]
pub struct ReflectorStats {
    pub answered: AtomicU64,
    /// Not authentic, or a nonce answered before.
    pub refused: AtomicU64,
}

/// The running service: a thread answering on one UDP socket until dropped.
pub struct Reflector {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<ReflectorStats>,
    thread: Option<JoinHandle<()>>,
}

impl Reflector {
    /// Binds `bind` and answers the job's ranks there.
    pub fn start(bind: SocketAddr, secret: [u8; 32]) -> std::io::Result<Reflector> {
        let udp = UdpSocket::bind(bind)?;
        // Bounds each wait, so a lost wake-up still ends the thread.
        udp.set_read_timeout(Some(Duration::from_secs(1)))?;
        let addr = udp.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(ReflectorStats::default());
        let (s2, st2) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new().name("wanmpi-reflector".into()).spawn(move || serve(udp, secret, &s2, &st2))?;
        Ok(Reflector { addr, stop, stats, thread: Some(thread) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stats(&self) -> &ReflectorStats {
        &self.stats
    }
}

impl Drop for Reflector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the thread from recv_from; the read timeout covers a loss.
        let wake_ip: IpAddr = if self.addr.is_ipv4() { Ipv4Addr::LOCALHOST.into() } else { Ipv6Addr::LOCALHOST.into() };
        let to = if self.addr.ip().is_unspecified() { SocketAddr::new(wake_ip, self.addr.port()) } else { self.addr };
        if let Ok(s) = UdpSocket::bind(SocketAddr::new(if to.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() }, 0)) {
            let _ = s.send_to(&[0], to);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(udp: UdpSocket, secret: [u8; 32], stop: &AtomicBool, stats: &ReflectorStats) {
    let mut buf = [0u8; 2 * REQUEST_LEN];
    let mut seen: HashSet<[u8; NONCE_LEN]> = HashSet::new();
    let mut order: VecDeque<[u8; NONCE_LEN]> = VecDeque::new();
    while !stop.load(Ordering::SeqCst) {
        let (len, from) = match udp.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted | ErrorKind::ConnectionRefused) => {
                continue
            }
            // Anything else (the socket gone bad) ends the service; ranks
            // then publish no reflexive candidate, as without a reflector.
            Err(_) => return,
        };
        let Some(nonce) = check_request(&secret, &buf[..len]) else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if !seen.insert(nonce) {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        order.push_back(nonce);
        if order.len() > SEEN_NONCES {
            if let Some(old) = order.pop_front() {
                seen.remove(&old);
            }
        }
        // Counted first: the rank may read the answer before send_to returns.
        stats.answered.fetch_add(1, Ordering::Relaxed);
        let _ = udp.send_to(&answer(&secret, &nonce, from), from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: [u8; 32] = [5; 32];

    fn client() -> UdpSocket {
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_nonblocking(true).unwrap();
        c
    }

    #[test]
    fn a_rank_learns_the_address_its_datagrams_come_from() {
        let r = Reflector::start("127.0.0.1:0".parse().unwrap(), SECRET).unwrap();
        let c = client();
        let seen = ask(&c, r.local_addr(), &SECRET, 3, Duration::from_secs(5)).unwrap();
        assert_eq!(seen, Some(c.local_addr().unwrap()));
        assert_eq!(r.stats().answered.load(Ordering::Relaxed), 1);
        // Still nonblocking afterwards: the transport relies on it.
        let mut b = [0u8; 8];
        assert_eq!(c.recv_from(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    }

    #[test]
    fn requests_without_the_secret_get_no_answer() {
        let r = Reflector::start("127.0.0.1:0".parse().unwrap(), SECRET).unwrap();
        let c = client();
        // Asked under another secret: the reflector stays silent.
        let seen = ask(&c, r.local_addr(), &[6; 32], 0, Duration::from_millis(500)).unwrap();
        assert_eq!(seen, None);
        // Garbage, a truncated request and an altered one: silent too.
        let mut altered = request(&SECRET, 0, &[1; NONCE_LEN]);
        altered[6] ^= 1;
        for d in [&b"hello"[..], &request(&SECRET, 0, &[1; NONCE_LEN])[..REQUEST_LEN - 1], &altered[..]] {
            c.send_to(d, r.local_addr()).unwrap();
        }
        // A good request after them is answered: the bad ones were read
        // (the reflector is serial) and refused.
        assert!(ask(&c, r.local_addr(), &SECRET, 0, Duration::from_secs(5)).unwrap().is_some());
        assert!(r.stats().refused.load(Ordering::Relaxed) >= 4, "{:?}", r.stats());
        assert_eq!(r.stats().answered.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_replayed_request_is_not_answered_again() {
        let r = Reflector::start("127.0.0.1:0".parse().unwrap(), SECRET).unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let req = request(&SECRET, 1, &[9; NONCE_LEN]);
        c.send_to(&req, r.local_addr()).unwrap();
        let mut b = [0u8; 128];
        let (n, _) = c.recv_from(&mut b).unwrap();
        assert_eq!(read_answer(&SECRET, &[9; NONCE_LEN], &b[..n]), Some(c.local_addr().unwrap()));
        c.send_to(&req, r.local_addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        assert!(c.recv_from(&mut b).is_err());
    }

    #[test]
    fn an_address_on_no_interface_binds_the_wildcard() {
        // TEST-NET-3: on no interface of a test machine.
        let (s, wild) = bind_udp("203.0.113.9".parse().unwrap(), None).unwrap();
        assert!(wild && s.local_addr().unwrap().ip().is_unspecified());
        let (s, wild) = bind_udp("127.0.0.1".parse().unwrap(), None).unwrap();
        assert!(!wild && s.local_addr().unwrap().ip().is_loopback());
        let c = udp_candidates(&s, "127.0.0.1".parse().unwrap(), None, &SECRET, 0).unwrap();
        assert_eq!(c, vec![s.local_addr().unwrap()]);
        assert_eq!(parse_candidates(&format_candidates(&c)), Some(c));
        assert_eq!(parse_candidates("1.2.3.4:5,x"), None);
        assert_eq!(parse_candidates(""), None);
    }

    #[test]
    fn answers_are_checked_and_never_larger_than_requests() {
        const { assert!(REQUEST_LEN >= ANSWER_LEN) };
        let from: SocketAddr = "198.18.0.7:40001".parse().unwrap();
        let a = answer(&SECRET, &[2; NONCE_LEN], from);
        assert_eq!(read_answer(&SECRET, &[2; NONCE_LEN], &a), Some(from));
        let v6: SocketAddr = "[2001:db8::1]:9".parse().unwrap();
        assert_eq!(read_answer(&SECRET, &[2; NONCE_LEN], &answer(&SECRET, &[2; NONCE_LEN], v6)), Some(v6));
        // Another nonce, another secret, an altered address: refused.
        assert_eq!(read_answer(&SECRET, &[3; NONCE_LEN], &a), None);
        assert_eq!(read_answer(&[1; 32], &[2; NONCE_LEN], &a), None);
        let mut bad = a;
        bad[5 + NONCE_LEN + 2] ^= 1;
        assert_eq!(read_answer(&SECRET, &[2; NONCE_LEN], &bad), None);
        // An answer is not a request, nor the other way round.
        assert_eq!(check_request(&SECRET, &a), None);
        assert_eq!(read_answer(&SECRET, &[1; NONCE_LEN], &request(&SECRET, 0, &[1; NONCE_LEN])), None);
    }
}
