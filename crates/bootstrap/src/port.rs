//! Ports for joining jobs (MPI_Open_port, MPI_Comm_accept/connect, and
//! MPI_Comm_spawn, whose children connect back to a port of their parent).
//!
//! A port is a TCP listener with a fresh secret. Its name carries both:
//! `wanmpi-port:1:<host>:<port>:<secret hex>`, so whoever holds the name
//! may connect and nobody else can. Only the two groups' roots talk here:
//!
//! ```text
//! acceptor:  wanmpi-port 1 <nonce-a>
//! connector: join <nonce-c> <proof-c> <group size>   | fail <nonce-c> <proof-c> <text>
//! acceptor:  ok <proof-a> <group size>
//! then blobs both ways: u32 little-endian length, bytes
//! ```
//!
//! Proofs are the key/value service's (HMAC of the port secret over the
//! other side's nonce); the two groups' joint key is derived from the
//! secret and both nonces, so it never travels. `fail` is the launcher's:
//! a spawn whose processes could not start tells the waiting parent so.

use crate::auth::{self, Role};
use crate::proto::{self, one_line};
use crate::BootstrapError;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

const PREFIX: &str = "wanmpi-port:1:";
/// Largest blob either root accepts (address tables, masks).
pub const MAX_BLOB: usize = 64 << 20;
/// How long one connection may take to prove the secret.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// A port's name, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortName {
    pub host: String,
    pub port: u16,
    pub secret: [u8; 32],
}

impl PortName {
    pub fn render(&self) -> String {
        format!("{PREFIX}{}:{}:{}", self.host, self.port, auth::hex(&self.secret))
    }

    pub fn parse(name: &str) -> Result<PortName, String> {
        let bad = || format!("{:?} is not a wanmpi port name (wanmpi-port:1:HOST:PORT:SECRET)", one_line(name));
        let rest = name.trim().strip_prefix(PREFIX).ok_or_else(bad)?;
        let (rest, secret) = rest.rsplit_once(':').ok_or_else(bad)?;
        let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let secret: [u8; 32] = auth::unhex(secret).and_then(|b| b.try_into().ok()).ok_or_else(bad)?;
        if host.is_empty() {
            return Err(bad());
        }
        Ok(PortName { host: host.trim_matches(['[', ']']).to_string(), port, secret })
    }
}

/// What the other root said about its group.
#[derive(Debug)]
pub struct Peer {
    pub stream: TcpStream,
    pub size: u32,
    /// The joint key of both groups (see the module doc).
    pub key: [u8; 32],
}

/// How an accept ended without a joining group.
#[derive(Debug)]
pub enum AcceptError {
    /// The launcher reports that the processes of a spawn did not start.
    Failed(String),
    TimedOut(Duration),
    Io(std::io::Error),
}

impl std::fmt::Display for AcceptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcceptError::Failed(t) => write!(f, "{t}"),
            AcceptError::TimedOut(d) => write!(f, "nobody connected within {} s", d.as_secs_f64()),
            AcceptError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// An open port.
pub struct Port {
    listener: TcpListener,
    name: PortName,
}

impl Port {
    /// Listens on `bind` (port in `range` when given) and names the port
    /// after `advertise`, the address others reach this process at.
    pub fn open(bind: &str, advertise: &str, range: Option<crate::PortRange>) -> Result<Port, BootstrapError> {
        let listener = crate::ports::bind_in(range, |p| TcpListener::bind((bind, p)))?;
        listener.set_nonblocking(true)?;
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).map_err(|e| BootstrapError::Protocol(format!("no randomness for a port secret: {e}")))?;
        let name = PortName { host: advertise.to_string(), port: listener.local_addr()?.port(), secret };
        Ok(Port { listener, name })
    }

    pub fn name(&self) -> String {
        self.name.render()
    }

    /// Waits up to `limit` for a connector that proves the secret; others
    /// are refused and named on stderr (`who` says whose port it is).
    pub fn accept(&self, my_size: u32, limit: Duration, who: &str) -> Result<Peer, AcceptError> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(AcceptError::TimedOut(limit));
            }
            let mut p = libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&self.listener), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, left.as_millis().clamp(1, 1000) as i32) };
            let (stream, from) = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(AcceptError::Io(e)),
            };
            match greet(stream, &self.name.secret, my_size) {
                Ok(Greeted::Join(peer)) => return Ok(peer),
                Ok(Greeted::Failed(text)) => return Err(AcceptError::Failed(text)),
                Err(why) => eprintln!("wanmpi: {who}: refused a connection to port {} from {from}: {why}", self.name.port),
            }
        }
    }
}

enum Greeted {
    Join(Peer),
    Failed(String),
}

fn greet(stream: TcpStream, secret: &[u8; 32], my_size: u32) -> Result<Greeted, String> {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(HANDSHAKE)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(HANDSHAKE)).map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let nonce = auth::nonce().map_err(|e| e.to_string())?;
    line_to(&stream, &format!("wanmpi-port 1 {nonce}"))?;
    let line = read(&stream, "its request")?;
    let words: Vec<&str> = line.splitn(4, ' ').collect();
    let (verb, theirs, proof) = match words[..] {
        [v, n, p, _] => (v, n, p),
        _ => return Err("not a port request".into()),
    };
    if !auth::verify(secret, Role::Client, &nonce, 0, proof) {
        return Err("wrong proof of the port's secret".into());
    }
    match verb {
        "fail" => Ok(Greeted::Failed(words[3].to_string())),
        "join" => {
            let size: u32 = words[3].parse().map_err(|_| "bad group size".to_string())?;
            line_to(&stream, &format!("ok {} {my_size}", auth::prove(secret, Role::Server, theirs, 0)))?;
            let key = auth::derive(secret, &format!("joint|{nonce}|{theirs}"));
            settle(&stream)?;
            Ok(Greeted::Join(Peer { stream, size, key }))
        }
        _ => Err(format!("unknown request {:?}", one_line(verb))),
    }
}

/// Connects to the port `name` for a group of `my_size` processes.
pub fn connect(name: &str, my_size: u32, timeout: Duration) -> Result<Peer, BootstrapError> {
    let port = PortName::parse(name).map_err(|e| BootstrapError::BadAddress(name.to_string(), e))?;
    let (stream, (server_nonce, my_nonce, proof)) = hello(&port, timeout)?;
    line_to(&stream, &format!("join {my_nonce} {proof} {my_size}")).map_err(BootstrapError::Protocol)?;
    let reply = read(&stream, "the answer to join").map_err(BootstrapError::Protocol)?;
    let words: Vec<&str> = reply.split(' ').collect();
    let ["ok", p, size] = words[..] else {
        return Err(BootstrapError::Refused(format!("the port answered {:?}", one_line(&reply))));
    };
    if !auth::verify(&port.secret, Role::Server, &my_nonce, 0, p) {
        return Err(BootstrapError::Refused("the port could not prove its secret".into()));
    }
    let size: u32 = size.parse().map_err(|_| BootstrapError::Protocol("bad group size from the port".into()))?;
    let key = auth::derive(&port.secret, &format!("joint|{server_nonce}|{my_nonce}"));
    settle(&stream).map_err(BootstrapError::Protocol)?;
    Ok(Peer { stream, size, key })
}

/// Tells whoever waits on port `name` that what it waits for will not
/// come (the launcher, when a spawn's processes did not start).
pub fn report_failure(name: &str, text: &str, timeout: Duration) -> Result<(), BootstrapError> {
    let port = PortName::parse(name).map_err(|e| BootstrapError::BadAddress(name.to_string(), e))?;
    let (stream, (_, my_nonce, proof)) = hello(&port, timeout)?;
    line_to(&stream, &format!("fail {my_nonce} {proof} {}", one_line(text))).map_err(BootstrapError::Protocol)
}

type Nonces = (String, String, String);

fn hello(port: &PortName, timeout: Duration) -> Result<(TcpStream, Nonces), BootstrapError> {
    let addr = (port.host.as_str(), port.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| BootstrapError::BadAddress(port.host.clone(), "resolves to nothing".into()))?;
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let _ = stream.set_nodelay(true);
    let greeting = read(&stream, "the port's greeting").map_err(BootstrapError::Protocol)?;
    let server_nonce = match greeting.split(' ').collect::<Vec<_>>()[..] {
        ["wanmpi-port", "1", n] => n.to_string(),
        _ => return Err(BootstrapError::Protocol(format!("not a wanmpi port: {:?}", one_line(&greeting)))),
    };
    let my_nonce = auth::nonce().map_err(|e| BootstrapError::Protocol(e.to_string()))?;
    let proof = auth::prove(&port.secret, Role::Client, &server_nonce, 0);
    Ok((stream, (server_nonce, my_nonce, proof)))
}

/// After the handshake the roots exchange blobs at the pace of their
/// groups' collectives: no read timeout but a generous bound.
fn settle(stream: &TcpStream) -> Result<(), String> {
    stream.set_read_timeout(Some(crate::timeout_from_env())).map_err(|e| e.to_string())
}

fn line_to(mut stream: &TcpStream, line: &str) -> Result<(), String> {
    stream.write_all(format!("{line}\n").as_bytes()).map_err(|e| e.to_string())
}

/// One line, read a byte at a time: the blobs that follow the handshake
/// must stay in the socket, not in a reader's buffer.
fn read(mut stream: &TcpStream, what: &str) -> Result<String, String> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match stream.read(&mut b) {
            Ok(0) => return Err(format!("closed before {what}")),
            Ok(_) if b[0] == b'\n' => break,
            Ok(_) if line.len() >= proto::MAX_LINE => return Err(format!("{what}: line too long")),
            Ok(_) => line.push(b[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("waiting for {what}: {e}")),
        }
    }
    String::from_utf8(line).map_err(|_| format!("{what}: not UTF-8"))
}

/// Sends one blob to the other root.
pub fn send_blob(mut stream: &TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).ok().filter(|l| (*l as usize) <= MAX_BLOB).ok_or_else(|| std::io::Error::other("blob too large"))?;
    stream.write_all(&len.to_le_bytes())?;
    stream.write_all(bytes)
}

/// Receives one blob from the other root.
pub fn recv_blob(mut stream: &TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_BLOB {
        return Err(std::io::Error::other(format!("a blob of {len} bytes is more than {MAX_BLOB}")));
    }
    let mut b = vec![0u8; len];
    stream.read_exact(&mut b)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> Port {
        Port::open("127.0.0.1", "127.0.0.1", None).expect("open")
    }

    #[test]
    fn names_round_trip_and_garbage_is_refused() {
        let p = open();
        let n = PortName::parse(&p.name()).expect("parse");
        assert_eq!(n.render(), p.name());
        for bad in ["", "tcp:1.2.3.4:5", "wanmpi-port:1::5:00", "wanmpi-port:1:h:99999:00", "wanmpi-port:1:h:5:xyz"] {
            assert!(PortName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn both_roots_derive_one_key_and_swap_blobs() {
        let p = open();
        let name = p.name();
        let t = std::thread::spawn(move || {
            let peer = connect(&name, 3, Duration::from_secs(5)).expect("connect");
            send_blob(&peer.stream, b"from c").expect("send");
            (peer.size, peer.key, recv_blob(&peer.stream).expect("recv"))
        });
        let peer = p.accept(2, Duration::from_secs(5), "test").expect("accept");
        assert_eq!(peer.size, 3);
        assert_eq!(recv_blob(&peer.stream).expect("recv"), b"from c");
        send_blob(&peer.stream, b"from a").expect("send");
        let (size, key, got) = t.join().expect("thread");
        assert_eq!((size, key, got), (2, peer.key, b"from a".to_vec()));
    }

    #[test]
    fn a_stranger_is_refused_and_the_port_keeps_waiting() {
        let p = open();
        let mut wrong = PortName::parse(&p.name()).expect("parse");
        wrong.secret[0] ^= 1;
        let (wrong, right) = (wrong.render(), p.name());
        let t = std::thread::spawn(move || {
            assert!(connect(&wrong, 1, Duration::from_secs(5)).is_err(), "a wrong secret must not join");
            report_failure(&right, "the children did not start: no such file", Duration::from_secs(5)).expect("report");
        });
        match p.accept(1, Duration::from_secs(10), "test") {
            Err(AcceptError::Failed(t)) => assert!(t.contains("no such file"), "{t}"),
            other => panic!("expected the failure report, got {other:?}"),
        }
        t.join().expect("thread");
    }

    #[test]
    fn an_accept_with_nobody_coming_ends_at_its_bound() {
        let p = open();
        let t0 = Instant::now();
        assert!(matches!(p.accept(1, Duration::from_millis(300), "test"), Err(AcceptError::TimedOut(_))));
        assert!(t0.elapsed() < Duration::from_secs(3));
    }
}
