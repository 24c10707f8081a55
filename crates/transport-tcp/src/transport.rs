//! `TcpTransport`: the connected job, and its `Transport` implementation.

use crate::options::TcpOptions;
use crate::rx::{RxBuf, RxError, DRAIN_BUDGET, RX_BUF};
use crate::setup;
use crate::sys::{Epoll, EventFd, Events, READ, WRITE};
use crate::tx::TxState;
use socket2::Socket;
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::time::Duration;
use wanmpi_bootstrap::KeyValue;
use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError};

/// epoll token of the self-send wake-up; peers use their rank as token.
const WAKE: u64 = u64::MAX - 1;

/// The engine's default eager limit; tcp has no reason to suggest another.
const EAGER_HINT: usize = 64 * 1024;

pub(crate) struct Conn {
    pub(crate) sock: Socket,
    rx: RxBuf,
    pub(crate) tx: TxState,
    /// The last try_send was refused: wake `wait` once the socket drains.
    blocked: bool,
    /// Whether epoll currently watches writability (only while a residual
    /// waits or a send was refused, so an idle writable socket never spins).
    writing: bool,
    /// Whether frames to and from this peer are sealed.
    sealed: bool,
}

pub(crate) enum Slot {
    Me,
    Open(Box<Conn>),
    Lost(String),
}

/// One rank's TCP connections to every other rank of the job.
///
/// Use: [`TcpTransport::connect`] once at start-up (every rank at the same
/// time: it meets the others through the key/value exchange), then the
/// [`Transport`] calls from the progress loop.
pub struct TcpTransport {
    pub(crate) rank: PeerId,
    pub(crate) caps: Caps,
    pub(crate) epoll: Epoll,
    wake: EventFd,
    pub(crate) events: Events,
    ready: Vec<(u64, u32)>,
    pub(crate) peers: Vec<Slot>,
    self_queue: VecDeque<Vec<u8>>,
    /// Peers lost but not yet reported through `poll_recv`.
    losses: VecDeque<(PeerId, String)>,
}

impl TcpTransport {
    /// Listens, publishes `tcp-ep-<rank>`, fences, and connects to every
    /// other rank, each connection authenticated with `secret`. Returns when
    /// all peers are connected, or fails after `opts.setup_timeout`.
    pub fn connect(kv: &mut dyn KeyValue, secret: [u8; 32], opts: TcpOptions) -> Result<TcpTransport, TransportError> {
        if opts.max_frame == 0 || opts.max_frame > u32::MAX as usize {
            return Err(TransportError::Setup(format!("max_frame {} must be in 1..=u32::MAX", opts.max_frame)));
        }
        let rank = kv.rank();
        let epoll = Epoll::new()?;
        let wake = EventFd::new()?;
        let socks = setup::establish(kv, &secret, &opts, &epoll)?;
        epoll.add(wake.raw_fd(), WAKE, READ)?;
        let mut peers = Vec::with_capacity(socks.len());
        for (r, sock) in socks.into_iter().enumerate() {
            peers.push(match sock {
                None => Slot::Me,
                Some((sock, keys)) => {
                    epoll.add(sock.as_raw_fd(), r as u64, READ)?;
                    let sealed = keys.is_some();
                    let (sealer, opener) = keys.map(|k| (k.sealer, k.opener)).unzip();
                    Slot::Open(Box::new(Conn {
                        sock,
                        rx: RxBuf::new(RX_BUF, opener),
                        tx: TxState::new(sealer),
                        blocked: false,
                        writing: false,
                        sealed,
                    }))
                }
            });
        }
        if opts.report {
            let open = |want: bool| -> Vec<u32> {
                (0..peers.len() as u32).filter(|&r| matches!(&peers[r as usize], Slot::Open(c) if c.sealed == want)).collect()
            };
            eprintln!("wanmpi tcp: rank {rank}: sealed (AES-128-GCM) to ranks {:?}, plain to ranks {:?}", open(true), open(false));
        }
        let caps = Caps { name: "tcp", channels: 1, max_frame: opts.max_frame, eager_limit_hint: EAGER_HINT, reliable: true };
        Ok(TcpTransport {
            rank,
            caps,
            epoll,
            wake,
            events: Events::with_capacity(peers.len() + 2),
            ready: Vec::new(),
            peers,
            self_queue: VecDeque::new(),
            losses: VecDeque::new(),
        })
    }

    /// Whether the connection to `peer` is sealed (None: no open connection).
    pub fn sealed(&self, peer: PeerId) -> Option<bool> {
        match self.peers.get(peer as usize)? {
            Slot::Open(c) => Some(c.sealed),
            _ => None,
        }
    }

    /// Closes the connection to `peer` and queues one `PeerLost` report.
    fn lose(&mut self, peer: PeerId, reason: String) {
        if let Some(slot @ Slot::Open(_)) = self.peers.get_mut(peer as usize) {
            if let Slot::Open(c) = slot {
                let _ = self.epoll.delete(c.sock.as_raw_fd());
            }
            *slot = Slot::Lost(reason.clone());
            self.losses.push_back((peer, reason));
        }
    }

    /// Watches writability exactly while a residual waits or a send was refused.
    fn set_writing(epoll: &Epoll, peer: PeerId, c: &mut Conn) -> std::io::Result<()> {
        let want = c.tx.pending() || c.blocked;
        if want != c.writing {
            epoll.modify(c.sock.as_raw_fd(), peer as u64, if want { READ | WRITE } else { READ })?;
            c.writing = want;
        }
        Ok(())
    }

    /// Pushes `peer`'s residual; true while some of it remains. `writable`:
    /// epoll said the socket has room, so a refused sender may try again.
    fn flush_peer(&mut self, peer: PeerId, writable: bool) -> bool {
        let Some(Slot::Open(c)) = self.peers.get_mut(peer as usize) else { return false };
        if writable {
            c.blocked = false;
        }
        let res = c.tx.flush(c.sock.as_raw_fd()).and_then(|_| Self::set_writing(&self.epoll, peer, c));
        match res {
            Ok(()) => c.tx.pending(),
            Err(e) => {
                self.lose(peer, format!("send failed: {e}"));
                false
            }
        }
    }

    /// Reads `peer`'s connection (up to the budget), delivering its frames.
    fn drain_peer(&mut self, peer: PeerId, sink: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let max = self.caps.max_frame;
        let Some(Slot::Open(c)) = self.peers.get_mut(peer as usize) else { return 0 };
        let mut n = 0;
        let mut reader = &c.sock;
        let res = c.rx.drain(&mut reader, max, DRAIN_BUDGET, &mut |bytes| {
            n += 1;
            sink(Incoming::Frame { peer, channel: 0, bytes });
        });
        if let Err(e) = res {
            if matches!(e, RxError::Tampered { .. }) {
                // A security event, said here even if the job survives the loss.
                eprintln!("wanmpi tcp: rank {}: connection from rank {peer}: {e}", self.rank);
            }
            self.lose(peer, e.to_string());
        }
        n
    }

    pub(crate) fn mark_all_closed(&mut self, reason: &str) {
        for slot in &mut self.peers {
            if let Slot::Open(_) = slot {
                *slot = Slot::Lost(reason.to_string());
            }
        }
        self.losses.clear();
    }
}

impl Transport for TcpTransport {
    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn rank(&self) -> PeerId {
        self.rank
    }

    fn size(&self) -> u32 {
        self.peers.len() as u32
    }

    fn path(&self, peer: PeerId) -> Option<wanmpi_transport::PathStats> {
        match self.peers.get(peer as usize)? {
            Slot::Open(c) => crate::path::tcp_path(&c.sock),
            _ => None,
        }
    }

    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        if channel >= self.caps.channels {
            return Err(TransportError::NoSuchChannel { channel, channels: self.caps.channels });
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.caps.max_frame {
            return Err(TransportError::FrameTooLarge { len, max: self.caps.max_frame });
        }
        let res = match self.peers.get_mut(peer as usize) {
            None => return Err(TransportError::NoSuchPeer(peer)),
            Some(Slot::Me) => {
                self.self_queue.push_back(parts.concat());
                self.wake.signal();
                return Ok(SendStatus::Sent);
            }
            Some(Slot::Lost(reason)) => return Err(TransportError::PeerLost { peer, reason: reason.clone() }),
            Some(Slot::Open(c)) => c.tx.send_frame(c.sock.as_raw_fd(), parts).and_then(|st| {
                c.blocked = st == SendStatus::WouldBlock;
                Self::set_writing(&self.epoll, peer, c).map(|()| st)
            }),
        };
        res.map_err(|e| {
            let reason = format!("send failed: {e}");
            self.lose(peer, reason.clone());
            TransportError::PeerLost { peer, reason }
        })
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        let mut count = 0;
        self.epoll.wait(&mut self.events, Some(Duration::ZERO))?;
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(self.events.iter());
        for &(token, ev) in &ready {
            if token == WAKE {
                continue;
            }
            let peer = token as PeerId;
            if ev & WRITE != 0 {
                self.flush_peer(peer, true);
            }
            if ev & !WRITE != 0 {
                count += self.drain_peer(peer, sink);
            }
        }
        self.ready = ready;
        if !self.self_queue.is_empty() {
            self.wake.clear();
            while let Some(f) = self.self_queue.pop_front() {
                sink(Incoming::Frame { peer: self.rank, channel: 0, bytes: &f });
                count += 1;
            }
        }
        while let Some((peer, reason)) = self.losses.pop_front() {
            sink(Incoming::PeerLost { peer, reason });
            count += 1;
        }
        Ok(count)
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        let mut pending = false;
        for peer in 0..self.peers.len() as PeerId {
            pending |= self.flush_peer(peer, false);
        }
        Ok(pending)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if !self.self_queue.is_empty() || !self.losses.is_empty() {
            return Ok(());
        }
        // Level-triggered: readability seen here is reported again to
        // poll_recv. Writability is handled now (push residuals, let refused
        // senders retry) so that the next wait does not return at once again.
        self.epoll.wait(&mut self.events, Some(timeout))?;
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(self.events.iter().filter(|&(tok, ev)| tok != WAKE && ev & WRITE != 0));
        for &(token, _) in &ready {
            self.flush_peer(token as PeerId, true);
        }
        self.ready = ready;
        Ok(())
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.epoll.raw_fd())
    }

    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        crate::shutdown::graceful(self, timeout)
    }
}
