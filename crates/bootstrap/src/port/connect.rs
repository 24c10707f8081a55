//! The connecting side of a port: prove the secret, check the port's
//! proof, derive the joint key. A port that drops the connection before it
//! answers (it had more strangers waiting than it keeps, `accept.rs`) is
//! tried again until the bound; one that refuses the proof is not.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::link::RootLink;
use super::name::PortName;
use super::Peer;
use crate::auth::{self, Role};
use crate::proto::{self, one_line};

/// How a connection to a port failed. No variant holds the port's secret:
/// ports appear as `host:port`.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}")]
    BadName(String),
    #[error("port {0}: {1}")]
    Io(String, std::io::Error),
    #[error("port {0}: {1}")]
    Protocol(String, String),
    #[error("port {0} refused: {1}")]
    Refused(String, String),
    #[error("port {0} did not let this process in within {1:?} (busy with other connections)")]
    Busy(String, Duration),
}

/// What one attempt came to.
enum Attempt<T> {
    Done(T),
    /// Dropped before an answer: the port was busy; try again.
    Again,
}

/// Connects to the port `name` for a group of `my_size` processes.
pub fn connect(name: &str, my_size: u32, timeout: Duration) -> Result<Peer, ConnectError> {
    let port = PortName::parse(name).map_err(ConnectError::BadName)?;
    retrying(&port, timeout, |stream, theirs, mine, proof| {
        line_to(stream, &format!("join {mine} {proof} {my_size}")).map_err(|e| ConnectError::Io(port.redacted(), e))?;
        let Some(reply) = read_line(stream).map_err(|e| proto_err(&port, format!("waiting for the answer to join: {e}")))? else {
            return Ok(Attempt::Again);
        };
        let words: Vec<&str> = reply.split(' ').collect();
        match words[..] {
            ["busy"] => Ok(Attempt::Again),
            ["refused", ..] => Err(ConnectError::Refused(port.redacted(), one_line(reply.trim_start_matches("refused ")))),
            ["ok", p, size] => {
                if !auth::verify(&port.secret, Role::Server, mine, 0, p) {
                    return Err(ConnectError::Refused(port.redacted(), "it could not prove the port's secret".into()));
                }
                let size: u32 = size.parse().map_err(|_| proto_err(&port, "a bad group size".into()))?;
                let key = auth::derive(&port.secret, &format!("joint|{theirs}|{mine}"));
                settle(stream).map_err(|e| ConnectError::Io(port.redacted(), e))?;
                let link = RootLink::new(stream.try_clone().map_err(|e| ConnectError::Io(port.redacted(), e))?, &key, false);
                Ok(Attempt::Done(Peer { link, size, key }))
            }
            _ => Err(proto_err(&port, format!("the port answered {:?}", one_line(&reply)))),
        }
    })
}

/// Tells whoever waits on port `name` that what it waits for will not
/// come (the launcher, when a spawn's processes did not start).
pub fn report_failure(name: &str, text: &str, timeout: Duration) -> Result<(), ConnectError> {
    let port = PortName::parse(name).map_err(ConnectError::BadName)?;
    retrying(&port, timeout, |stream, _, mine, proof| {
        line_to(stream, &format!("fail {mine} {proof} {}", one_line(text))).map_err(|e| ConnectError::Io(port.redacted(), e))?;
        // The port closes once it has read the line; "busy" means it did not.
        match read_line(stream) {
            Ok(Some(l)) if l == "busy" => Ok(Attempt::Again),
            _ => Ok(Attempt::Done(())),
        }
    })
}

fn proto_err(port: &PortName, text: String) -> ConnectError {
    ConnectError::Protocol(port.redacted(), text)
}

/// Runs `step` (given the stream, the port's nonce, ours and our proof)
/// on fresh connections until it is done, fails, or `timeout` passes.
fn retrying<T>(
    port: &PortName,
    timeout: Duration,
    mut step: impl FnMut(&TcpStream, &str, &str, &str) -> Result<Attempt<T>, ConnectError>,
) -> Result<T, ConnectError> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ConnectError::Busy(port.redacted(), timeout));
        }
        if let Some((stream, theirs)) = hello(port, left)? {
            let mine = auth::nonce().map_err(|e| proto_err(port, format!("no randomness for a nonce: {e}")))?;
            let proof = auth::prove(&port.secret, Role::Client, &theirs, 0);
            if let Attempt::Done(t) = step(&stream, &theirs, &mine, &proof)? {
                return Ok(t);
            }
        }
        // Dropped by a busy port: again, a little later each time so that
        // a port under a flood is not flooded by us too.
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// A connection and the port's nonce; `None` if the port closed it before
/// greeting (busy).
fn hello(port: &PortName, timeout: Duration) -> Result<Option<(TcpStream, String)>, ConnectError> {
    let io = |e: std::io::Error| ConnectError::Io(port.redacted(), e);
    let addr = (port.host.as_str(), port.port)
        .to_socket_addrs()
        .map_err(io)?
        .next()
        .ok_or_else(|| proto_err(port, "the host resolves to no address".into()))?;
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(io)?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let _ = stream.set_nodelay(true);
    let Some(greeting) = read_line(&stream).map_err(|e| proto_err(port, format!("waiting for its greeting: {e}")))? else {
        return Ok(None);
    };
    match greeting.split(' ').collect::<Vec<_>>()[..] {
        ["wanmpi-port", "1", n] => Ok(Some((stream, n.to_string()))),
        ["busy"] => Ok(None),
        _ => Err(proto_err(port, format!("not a wanmpi port: {:?}", one_line(&greeting)))),
    }
}

/// After the handshake the roots exchange blobs at the pace of their
/// groups' collectives: no short read timeout but a generous bound.
pub(super) fn settle(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(crate::timeout_from_env()))?;
    stream.set_write_timeout(Some(crate::timeout_from_env()))
}

pub(super) fn line_to(mut stream: &TcpStream, line: &str) -> std::io::Result<()> {
    stream.write_all(format!("{line}\n").as_bytes())
}

/// One line, read a byte at a time (the blobs that follow the handshake
/// must stay in the socket, not in a reader's buffer); `None` when the
/// other end closed first.
fn read_line(mut stream: &TcpStream) -> Result<Option<String>, String> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match stream.read(&mut b) {
            Ok(0) => return Ok(None),
            Ok(_) if b[0] == b'\n' => break,
            Ok(_) if line.len() >= proto::MAX_LINE => return Err("a line too long".into()),
            Ok(_) => line.push(b[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(None),
            Err(e) => return Err(e.to_string()),
        }
    }
    String::from_utf8(line).map(Some).map_err(|_| "a line that is not UTF-8".into())
}
