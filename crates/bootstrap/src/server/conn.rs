//! One connection: the handshake, then requests until the peer hangs up;
//! over TCP every line after the handshake is sealed (`sealed_lines`), and
//! a record that fails its integrity check ends the connection, reported.

use super::limits::Ticket;
use super::state::{Shared, Writer};
use super::ServerEvent;
use crate::addr::Stream;
use crate::auth::{self, Role};
use crate::proto::{self, Request, VERSION};
use crate::sealed_lines::{self, LineKeys};
use crate::BootstrapError;
use std::io::{BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub fn serve(stream: Stream, shared: &Arc<Shared>, ticket: &Ticket) {
    let peer = stream.peer();
    let (rank, keys) = match handshake(&stream, shared, ticket) {
        Ok(proven) => {
            // From here on this thread is a rank's, for the whole job: it no
            // longer counts among the strangers' handshake threads.
            shared.handshakes.thread_ended();
            proven
        }
        Err(Refusal { reason, tell_peer }) => {
            // Not in the table any more: it was cut short.
            let reason = if shared.handshakes.finished(ticket) {
                reason
            } else {
                format!("cut short to make room: more than {} connections were proving the secret at once", shared.handshakes.max())
            };
            // Reported before the peer hears it: the peer may end the job at
            // once, and mpirun must still have seen the refusal.
            shared.refusals.refused(&shared.sink, peer, reason.clone());
            if tell_peer {
                let _ = send(&stream, &format!("err {reason}"));
            }
            let _ = stream.shutdown();
            drop(stream);
            shared.handshakes.thread_ended();
            return;
        }
    };
    (shared.sink)(ServerEvent::Connected { rank });
    // Requests may come hours apart (finalize after a long run): no timeout.
    let _ = stream.set_read_timeout(None);
    if let Err(e) = requests(rank, &stream, shared, keys) {
        // An altered record: reported, and the connection closed (a clone
        // stays registered), so the rank's call fails at once and ends it.
        if e.to_string().contains("integrity check failed") {
            shared.refusals.refused(&shared.sink, format!("rank {rank} at {peer}"), e.to_string());
        }
        let _ = stream.shutdown();
    }
}

fn send(mut w: &Stream, line: &str) -> std::io::Result<()> {
    w.write_all(format!("{line}\n").as_bytes())
}

/// Why a handshake failed, and whether the peer is owed an `err` line.
struct Refusal {
    reason: String,
    tell_peer: bool,
}

impl From<String> for Refusal {
    fn from(reason: String) -> Self {
        Refusal { reason, tell_peer: false }
    }
}

/// The proven rank, and the connection's keys if it is sealed (TCP): two
/// copies, one for reading and one for writing (each counts its own
/// direction), since pushes are written from other threads.
fn handshake(stream: &Stream, shared: &Shared, ticket: &Ticket) -> Result<(u32, Option<(LineKeys, LineKeys)>), Refusal> {
    let cfg = &shared.config;
    stream.set_read_timeout(Some(cfg.hello_timeout)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(cfg.hello_timeout)).map_err(|e| e.to_string())?;
    let nonce = auth::nonce().map_err(|e| format!("no randomness for a nonce: {e}"))?;
    send(stream, &format!("wanmpi-kv {VERSION} {nonce}")).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let line = match proto::read_line(&mut reader) {
        Ok(Some(l)) => l,
        Ok(None) => return Err("closed before hello".to_string().into()),
        Err(BootstrapError::Io(e)) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            return Err(format!("no hello within {:?}", cfg.hello_timeout).into())
        }
        Err(e) => return Err(e.to_string().into()),
    };
    let refuse = |why: &str| Err(Refusal { reason: why.to_string(), tell_peer: true });
    let Ok(Request::Hello { rank, nonce: client_nonce, proof }) = Request::parse(&line) else {
        return refuse("expected hello");
    };
    if rank >= cfg.size {
        return refuse(&format!("rank {rank} is not in a job of size {}", cfg.size));
    }
    if !auth::verify(&cfg.secret, Role::Client, &nonce, rank, &proof) {
        return refuse(&format!("wrong proof of the job secret for rank {rank}"));
    }
    // Leave the table of waiting handshakes before saying ok, so that a
    // rank told ok is never cut short afterwards.
    if !shared.handshakes.finished(ticket) {
        return Err("cut short".to_string().into());
    }
    let answer = auth::prove(&cfg.secret, Role::Server, &client_nonce, rank);
    send(stream, &format!("ok {answer}")).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    let keys = matches!(stream, Stream::Tcp(_)).then(|| {
        (LineKeys::derive(&cfg.secret, &nonce, &client_nonce, rank, false), LineKeys::derive(&cfg.secret, &nonce, &client_nonce, rank, false))
    });
    Ok((rank, keys))
}

fn requests(rank: u32, stream: &Stream, shared: &Shared, keys: Option<(LineKeys, LineKeys)>) -> Result<(), BootstrapError> {
    shared.register(stream.try_clone()?);
    let (mut keys, send_keys) = match keys {
        Some((r, s)) => (Some(r), Some(s)),
        None => (None, None),
    };
    // Replies go through the same lock as the pushes other threads send.
    let writer = Arc::new(Mutex::new(Writer { stream: stream.try_clone()?, keys: send_keys }));
    shared.register_writer(rank, writer.clone());
    let reply_with = |line: &str| writer.lock().unwrap_or_else(|p| p.into_inner()).send(line);
    let mut reader = BufReader::new(stream.try_clone()?);
    while let Some(line) = sealed_lines::read_line(&mut reader, keys.as_mut())? {
        let req = match Request::parse(&line) {
            Ok(r) => r,
            Err(why) => {
                reply_with(&format!("err {}", proto::one_line(&why)))?;
                continue;
            }
        };
        let reply = match req {
            Request::Hello { .. } => "err already said hello".to_string(),
            Request::Whoami => match stream {
                Stream::Tcp(s) => s.peer_addr().map_or_else(|_| "seen -".into(), |a| format!("seen {}", a.ip().to_canonical())),
                Stream::Unix(_) => "seen -".into(),
            },
            Request::Put { key, value } => {
                shared.put(key, value);
                "ok".into()
            }
            Request::Fence => match shared.fence(rank) {
                Ok(()) => "ok".into(),
                Err(why) => format!("err {why}"),
            },
            Request::Get { key } => match shared.get(&key) {
                Some(v) => format!("val {v}"),
                None => "missing".into(),
            },
            Request::Abort { code, message } => {
                (shared.sink)(ServerEvent::Abort { rank, code, message });
                "ok".into()
            }
            Request::Finalize => {
                shared.finalize(rank);
                (shared.sink)(ServerEvent::Finalized { rank });
                "ok".into()
            }
            Request::PeerLost { rank: lost, reason } => {
                (shared.sink)(ServerEvent::PeerLost { reporter: rank, rank: lost, reason });
                "ok".into()
            }
            Request::Spawn { request } => match crate::SpawnRequest::decode(&request) {
                Ok(request) => {
                    (shared.sink)(ServerEvent::Spawn { rank, request });
                    "ok".into()
                }
                Err(why) => format!("err {}", proto::one_line(&why)),
            },
            Request::Agree { id, members, acked, value } => {
                shared.agree(rank, &id, members, acked, &value);
                continue;
            }
            Request::Revoke { id, members } => {
                shared.revoke(rank, &id, &members);
                continue;
            }
        };
        reply_with(&reply)?;
    }
    Ok(())
}
