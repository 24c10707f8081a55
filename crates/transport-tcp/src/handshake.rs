//! One connection being set up: a nonblocking socket driven through the
//! `auth` exchange, either as the connector (we dialled a higher rank) or as
//! the acceptor (someone dialled us and must prove who it is). Each side
//! says in the exchange whether it wants the connection sealed; the result
//! is the connection's keys, or none, and both sides' resume points (how
//! many frames each has delivered from the other: 0 at setup).

use crate::auth::{self, Acceptor, AuthError, Connector, CHALLENGE_LEN, HELLO_LEN, PROOF_LEN, VERDICT_LEN};
use crate::seal::Keys;
use crate::sys::send_vectored;
use socket2::Socket;
use std::io::{self, Read};
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::time::Instant;

/// Room for the longest handshake message read at once.
const MSG_ROOM: usize = 80;
const _: () = assert!(CHALLENGE_LEN <= MSG_ROOM && HELLO_LEN <= MSG_ROOM && PROOF_LEN <= MSG_ROOM && VERDICT_LEN <= MSG_ROOM);

pub(crate) enum Role {
    /// We dialled `peer`, having delivered `got` of its frames.
    Out { peer: u32, conn: Connector, step: OutStep, got: u64 },
    /// A caller that has not yet proven who it is.
    In { acc: Acceptor, step: InStep },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutStep {
    Connecting,
    AwaitChallenge,
    AwaitVerdict,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum InStep {
    AwaitHello,
    AwaitProof,
    /// (the proven rank, its resume point, ours)
    SendVerdict(u32, u64, u64),
}

/// What the owner of all handshakes decides for an incoming caller.
pub(crate) trait Admit {
    /// May a caller claiming `rank` go on (checked on HELLO and on proof)?
    fn may_claim(&self, rank: u32) -> Result<(), String>;
    /// The caller proved `rank`; reserve it so a duplicate is refused.
    fn claim(&mut self, rank: u32);
    /// Does this side want the connection to `peer` sealed, given the
    /// socket's own and remote addresses?
    fn wants_seal(&self, peer: u32, local: Option<IpAddr>, remote: Option<IpAddr>) -> bool;
    /// Frames this side has delivered from `peer`: its resume point.
    fn received(&self, peer: u32) -> u64;
}

/// A finished handshake: who, the keys if sealed, and where each direction
/// resumes.
pub(crate) struct Done {
    pub(crate) rank: u32,
    pub(crate) keys: Option<Box<Keys>>,
    /// Frames the peer has delivered from us: our sending resumes there.
    pub(crate) peer_got: u64,
    /// Frames we had delivered from the peer when we said so.
    pub(crate) our_got: u64,
}

pub(crate) enum Step {
    /// Waiting for the socket; `write` asks for writability too.
    Blocked { write: bool },
    /// Authenticated connection.
    Done(Done),
}

pub(crate) struct Handshake {
    pub(crate) sock: Socket,
    pub(crate) addr: String,
    pub(crate) role: Role,
    pub(crate) deadline: Instant,
    out: Vec<u8>,
    out_pos: usize,
    inb: Vec<u8>,
    want: usize,
    /// The acceptor's keys, from the proof until the verdict is sent.
    keys: Option<Keys>,
    /// Set when the peer we dialled runs another handshake version: setup
    /// fails at once instead of dialling again.
    pub(crate) fatal: Option<String>,
    /// Set when the connection we dialled was refused (nothing listens).
    pub(crate) refused: bool,
}

impl Handshake {
    pub(crate) fn outgoing(sock: Socket, addr: String, peer: u32, conn: Connector, got: u64, deadline: Instant) -> Handshake {
        let role = Role::Out { peer, conn, step: OutStep::Connecting, got };
        Handshake { sock, addr, role, deadline, out: vec![], out_pos: 0, inb: vec![], want: 0, keys: None, fatal: None, refused: false }
    }

    pub(crate) fn incoming(sock: Socket, addr: String, acc: Acceptor, deadline: Instant) -> Handshake {
        let role = Role::In { acc, step: InStep::AwaitHello };
        Handshake { sock, addr, role, deadline, out: vec![], out_pos: 0, inb: vec![], want: HELLO_LEN, keys: None, fatal: None, refused: false }
    }

    /// Whether an outgoing connection still waits for the TCP connect.
    pub(crate) fn connecting(&self) -> bool {
        matches!(self.role, Role::Out { step: OutStep::Connecting, .. })
    }

    /// An outgoing handshake that has sent (or queued) its proof: the
    /// peer may already count this connection as made (`setup`'s rule).
    pub(crate) fn proving(&self) -> bool {
        matches!(self.role, Role::Out { step: OutStep::AwaitVerdict, .. })
    }

    /// The rank we dialled, for outgoing handshakes.
    pub(crate) fn dialled(&self) -> Option<u32> {
        match self.role {
            Role::Out { peer, .. } => Some(peer),
            Role::In { .. } => None,
        }
    }

    /// Advances as far as the socket allows. An error is the reason to drop
    /// the connection.
    pub(crate) fn drive(&mut self, admit: &mut dyn Admit) -> Result<Step, String> {
        loop {
            if let Role::Out { step: OutStep::Connecting, .. } = self.role {
                if !self.connected(admit)? {
                    return Ok(Step::Blocked { write: true });
                }
            }
            if self.out_pos < self.out.len() {
                match send_vectored(self.sock.as_raw_fd(), &[&self.out[self.out_pos..]]) {
                    Ok(n) => self.out_pos += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Step::Blocked { write: true }),
                    Err(e) => return Err(format!("send failed: {e}")),
                }
                continue;
            }
            if self.inb.len() < self.want {
                let mut tmp = [0u8; MSG_ROOM];
                let room = self.want - self.inb.len();
                match (&self.sock).read(&mut tmp[..room]) {
                    Ok(0) => return Err(self.closed_early()),
                    Ok(n) => self.inb.extend_from_slice(&tmp[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Step::Blocked { write: false }),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(format!("receive failed: {e}")),
                }
                continue;
            }
            if let Some((rank, peer_got, our_got)) = self.advance(admit)? {
                return Ok(Step::Done(Done { rank, keys: self.keys.take().map(Box::new), peer_got, our_got }));
            }
        }
    }

    /// Why the peer closed before its message was whole: a notice that it
    /// runs another version (fatal for setup), or nothing said.
    fn closed_early(&mut self) -> String {
        let awaiting_challenge = matches!(self.role, Role::Out { step: OutStep::AwaitChallenge, .. });
        match auth::notice_version(&self.inb).filter(|_| awaiting_challenge) {
            Some(e) => {
                let msg = e.to_string();
                self.fatal = Some(msg.clone());
                msg
            }
            None => "closed during the handshake".into(),
        }
    }

    /// True once a nonblocking connect has completed; its error otherwise.
    fn connected(&mut self, admit: &dyn Admit) -> Result<bool, String> {
        if let Some(e) = self.sock.take_error().map_err(|e| e.to_string())? {
            self.refused = e.raw_os_error() == Some(libc::ECONNREFUSED);
            return Err(format!("connect failed: {e}"));
        }
        match self.sock.peer_addr() {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => return Ok(false),
            Err(e) => return Err(format!("connect failed: {e}")),
        }
        let (local, remote) = self.ips();
        if let Role::Out { peer, conn, step, .. } = &mut self.role {
            conn.want_seal(admit.wants_seal(*peer, local, remote));
            self.out = conn.hello().to_vec();
            self.out_pos = 0;
            self.want = CHALLENGE_LEN;
            *step = OutStep::AwaitChallenge;
        }
        Ok(true)
    }

    /// This socket's own and remote IP addresses, when the kernel says.
    fn ips(&self) -> (Option<IpAddr>, Option<IpAddr>) {
        let ip = |a: io::Result<socket2::SockAddr>| a.ok().and_then(|a| a.as_socket()).map(|a| a.ip());
        (ip(self.sock.local_addr()), ip(self.sock.peer_addr()))
    }

    /// A whole message has arrived (or been sent): take the next step.
    /// Done: (the peer's rank, its resume point, ours).
    fn advance(&mut self, admit: &mut dyn Admit) -> Result<Option<(u32, u64, u64)>, String> {
        let (local, remote) = self.ips();
        let msg = std::mem::take(&mut self.inb);
        self.out.clear();
        self.out_pos = 0;
        match &mut self.role {
            Role::Out { peer, conn, step, got } => match step {
                OutStep::Connecting => Ok(None),
                OutStep::AwaitChallenge => {
                    self.out = conn.answer(&msg, *got).map_err(|e| e.to_string())?.to_vec();
                    self.want = VERDICT_LEN;
                    *step = OutStep::AwaitVerdict;
                    Ok(None)
                }
                OutStep::AwaitVerdict => {
                    let (keys, peer_got) = conn.check_verdict(&msg).map_err(|e| e.to_string())?;
                    self.keys = keys;
                    Ok(Some((*peer, peer_got, *got)))
                }
            },
            Role::In { acc, step } => match *step {
                InStep::AwaitHello => {
                    let (claimed, chal) = match acc.challenge(&msg, |claimed| admit.wants_seal(claimed, local, remote)) {
                        Err(e @ AuthError::BadVersion(_)) => {
                            // A few bytes into an empty send buffer: the
                            // caller learns our version and stops at once.
                            let _ = send_vectored(self.sock.as_raw_fd(), &[&auth::version_notice()]);
                            return Err(e.to_string());
                        }
                        other => other.map_err(|e| e.to_string())?,
                    };
                    admit.may_claim(claimed)?;
                    self.out = chal.to_vec();
                    self.want = PROOF_LEN;
                    *step = InStep::AwaitProof;
                    Ok(None)
                }
                InStep::AwaitProof => {
                    let (rank, keys, peer_got) = acc.verify(&msg).map_err(|e| e.to_string())?;
                    admit.may_claim(rank)?;
                    self.keys = keys;
                    admit.claim(rank);
                    let our_got = admit.received(rank);
                    self.out = acc.verdict(our_got).ok_or("no verdict before the proof")?.to_vec();
                    self.want = 0;
                    *step = InStep::SendVerdict(rank, peer_got, our_got);
                    Ok(None)
                }
                InStep::SendVerdict(rank, peer_got, our_got) => Ok(Some((rank, peer_got, our_got))),
            },
        }
    }

    /// The rank this caller already proved, if any (to release its claim
    /// when the connection fails before completion).
    pub(crate) fn claimed(&self) -> Option<u32> {
        match self.role {
            Role::In { step: InStep::SendVerdict(rank, ..), .. } => Some(rank),
            _ => None,
        }
    }
}
