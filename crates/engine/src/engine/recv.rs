//! The receiving side: posting receives, frames arriving, matching them
//! (through `matching`), and placing data into receive buffers.

use wanmpi_transport::{Incoming, PeerId};
use wanmpi_wire::{flags, Envelope, Frame};

use super::{Buffered, Engine, Target};
use crate::error::{err, ErrorClass, MpiError, MpiResult};
use crate::matching::{Arrival, Posted, Unexp};
use crate::request::{RecvBuf, RecvPhase, RecvReq, ReqKind, Request, RequestId, Status};

/// A message taken out of matching by a matched probe (MPI_Mprobe), waiting
/// for its matched receive (MPI_Mrecv).
#[derive(Debug)]
pub struct MatchedMessage {
    unexp: Unexp,
}

impl MatchedMessage {
    pub fn source(&self) -> PeerId {
        self.unexp.peer
    }
    pub fn tag(&self) -> i32 {
        self.unexp.env.tag
    }
    pub fn len(&self) -> usize {
        self.unexp.env.total_len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How an envelope came: which protocol its sender chose.
#[derive(Debug, Clone, Copy)]
struct Arrive {
    rendezvous: bool,
    sync: bool,
    windowed: bool,
}

/// What a probe reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeInfo {
    pub source: PeerId,
    pub tag: i32,
    pub len: usize,
}

impl Engine {
    /// Posts a receive from `src` (None = any source) on `ctx` for `tag`
    /// (None = any tag) into `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid until the request completes.
    pub unsafe fn irecv(&mut self, src: Option<PeerId>, ctx: u32, tag: Option<i32>, buf: RecvBuf) -> MpiResult<RequestId> {
        if let Some(s) = src {
            if s >= self.size {
                return err(ErrorClass::Rank, format!("source {s} is not a process of this job (size {})", self.size));
            }
        }
        let id = self.new_recv(src, ctx, tag, buf);
        match self.matcher.post(Posted { id, src, ctx, tag }) {
            Some(u) => self.deliver_unexpected(u, id),
            None => {
                if let Some(s) = src {
                    if let Some(reason) = self.lost.get(&s).cloned() {
                        self.matcher.cancel(id);
                        self.fail(id, MpiError::new(ErrorClass::ProcFailed, format!("rank {s} is lost: {reason}")));
                    } else {
                        self.announce_credit(s, ctx, tag, buf.cap);
                    }
                }
            }
        }
        Ok(id)
    }

    fn new_recv(&mut self, src: Option<PeerId>, ctx: u32, tag: Option<i32>, buf: RecvBuf) -> RequestId {
        self.reqs.insert(Request {
            kind: ReqKind::Recv(RecvReq { src, ctx, tag, buf, phase: RecvPhase::Posted, status: Status::empty() }),
            complete: false,
            status: Status::empty(),
            detached: false,
        })
    }

    /// MPI_Iprobe: what a receive for (src, ctx, tag) would take now.
    pub fn iprobe(&self, src: Option<PeerId>, ctx: u32, tag: Option<i32>) -> Option<ProbeInfo> {
        self.matcher.probe(src, ctx, tag).map(|u| ProbeInfo { source: u.peer, tag: u.env.tag, len: u.env.total_len as usize })
    }

    /// MPI_Improbe: takes the message out of matching.
    pub fn improbe(&mut self, src: Option<PeerId>, ctx: u32, tag: Option<i32>) -> Option<MatchedMessage> {
        self.matcher.take(src, ctx, tag).map(|unexp| MatchedMessage { unexp })
    }

    /// MPI_Imrecv: receives a message taken by `improbe`.
    ///
    /// # Safety
    /// As `irecv`.
    pub unsafe fn imrecv(&mut self, msg: MatchedMessage, buf: RecvBuf) -> RequestId {
        let u = msg.unexp;
        let id = self.new_recv(Some(u.peer), u.env.ctx, Some(u.env.tag), buf);
        self.deliver_unexpected(u, id);
        id
    }

    /// Feeds one event from the transport.
    pub fn handle_incoming(&mut self, ev: Incoming<'_>) {
        match ev {
            Incoming::Frame { peer, bytes, .. } => self.handle_frame(peer, bytes),
            Incoming::PeerLost { peer, reason } => self.peer_lost(peer, reason),
        }
    }

    /// Feeds one frame received from `peer`.
    pub fn handle_frame(&mut self, peer: PeerId, bytes: &[u8]) {
        if peer >= self.size {
            self.stats.bad_frames += 1;
            return;
        }
        let frame = match Frame::parse(bytes) {
            Ok(f) => f,
            Err(e) => return self.bad_frame(peer, &e.to_string()),
        };
        match frame {
            Frame::Eager { env, flags: f, payload } => {
                let how = Arrive { rendezvous: false, sync: f & flags::SYNC != 0, windowed: f & flags::WINDOW != 0 };
                self.arrive(peer, env, how, payload)
            }
            Frame::Rts { env, .. } => self.arrive_rts(peer, env, false),
            Frame::Data { msg_id, offset, payload } => self.handle_data(peer, msg_id, offset, payload),
            Frame::Cts { msg_id, accept_len } => self.handle_cts(peer, msg_id, accept_len),
            Frame::SyncAck { msg_id } => self.handle_sync_ack(peer, msg_id),
            Frame::RecvCredit { ctx, tag, capacity } => self.handle_credit(peer, ctx, tag, capacity),
            Frame::Bye => {
                self.departed.insert(peer);
            }
            Frame::Grant { bytes } => self.handle_grant(peer, bytes),
            Frame::RtsLocal { env, flags: f, addr } => self.handle_rts_local(peer, env, f & flags::SYNC != 0, addr),
            Frame::ReadDone { msg_id } => self.handle_read_done(peer, msg_id),
        }
    }

    /// A peer sent something the protocol does not allow: count it and drop
    /// it. It never touches another message's state.
    pub(super) fn bad_frame(&mut self, peer: PeerId, what: &str) {
        self.stats.bad_frames += 1;
        if self.stats.bad_frames <= 10 {
            eprintln!("wanmpi: rank {}: dropped a bad frame from rank {peer}: {what}", self.rank);
        }
    }

    /// A request-to-send arrived (its data comes after clear-to-send, or is
    /// read: `single_copy.rs`). A rendezvous receive is matched before any
    /// data moves, so `sync` needs no acknowledgement of its own.
    pub(super) fn arrive_rts(&mut self, peer: PeerId, env: Envelope, _sync: bool) {
        self.arrive(peer, env, Arrive { rendezvous: true, sync: false, windowed: false }, &[])
    }

    /// An envelope arrived (eager first frame or RTS).
    fn arrive(&mut self, peer: PeerId, env: Envelope, how: Arrive, payload: &[u8]) {
        let Arrive { rendezvous, sync, windowed } = how;
        let allowed = (self.cfg.eager_limit as u64).max(self.announced_max[peer as usize]);
        if windowed {
            if !self.admit_windowed(peer, env.total_len) {
                return self.bad_frame(peer, "windowed message beyond the window granted");
            }
        } else if !rendezvous && env.total_len > allowed {
            return self.bad_frame(peer, "eager message longer than the eager limit and any credit given");
        }
        self.stats.msgs_received += 1;
        let unexp = Unexp { peer, env, rendezvous, sync, windowed };
        let channel = self.channel_for(env.ctx, env.tag);
        match self.matcher.arrive(peer, &env) {
            Arrival::Duplicate => {
                if windowed {
                    self.window.release(peer, env.total_len);
                }
                return self.bad_frame(peer, "repeated sequence number");
            }
            Arrival::Matched(id) => {
                self.stats.count_arrival(peer, channel, env.total_len, true);
                self.start_delivery(unexp, id, payload);
            }
            Arrival::Unexpected => {
                self.stats.count_arrival(peer, channel, env.total_len, false);
                if !rendezvous {
                    let mut data = Vec::with_capacity(env.total_len as usize);
                    data.extend_from_slice(payload);
                    let got = payload.len();
                    if (got as u64) < env.total_len {
                        self.inbound.insert((peer, env.msg_id), Target::Unexpected);
                    }
                    self.unexpected_data.insert((peer, env.msg_id), Buffered { data, got, total: env.total_len as usize });
                }
                self.matcher.add_unexpected(unexp);
            }
        }
        self.deliver_released();
    }

    /// Delivers the unexpected messages that receives held back until now
    /// may take (after an arrival or a cancel).
    pub(super) fn deliver_released(&mut self) {
        for (u, id) in self.matcher.rescan() {
            self.deliver_unexpected(u, id);
        }
        self.stats.bound_ahead = self.matcher.bound_ahead();
    }

    /// A receive matched an unexpected message: hand over what is buffered.
    fn deliver_unexpected(&mut self, u: Unexp, id: RequestId) {
        let key = (u.peer, u.env.msg_id);
        match self.unexpected_data.remove(&key) {
            Some(b) => {
                let data = b.data;
                let got = b.got;
                self.start_delivery(u, id, &data[..got]);
            }
            None => self.start_delivery(u, id, &[]),
        }
    }

    /// Binds a matched message to its receive: answers the sender if needed
    /// and places the data that is already here.
    fn start_delivery(&mut self, u: Unexp, id: RequestId, have: &[u8]) {
        let total = u.env.total_len as usize;
        let channel = self.channel_for(u.env.ctx, u.env.tag);
        if u.windowed {
            self.return_window(u.peer, u.env.total_len);
        }
        let Some(Request { kind: ReqKind::Recv(r), .. }) = self.reqs.get_mut(id) else { return };
        let cap = r.buf.cap;
        r.status = Status {
            source: u.peer,
            tag: u.env.tag,
            bytes: total.min(cap),
            error: (total > cap).then(|| {
                MpiError::new(
                    ErrorClass::Truncate,
                    format!("message of {total} bytes from rank {} does not fit a receive buffer of {cap} bytes", u.peer),
                )
            }),
            cancelled: false,
        };
        let expect = if u.rendezvous { total.min(cap) } else { total };
        r.phase = RecvPhase::Receiving { got: 0, expect };
        if u.rendezvous {
            if self.take_offer(id, u.peer, u.env.msg_id, expect, channel) {
                return;
            }
            self.queue_control(u.peer, channel, Frame::Cts { msg_id: u.env.msg_id, accept_len: expect as u64 });
        } else if u.sync {
            self.queue_control(u.peer, channel, Frame::SyncAck { msg_id: u.env.msg_id });
        }
        // A message whose bytes are all here (the usual short one) never
        // needs an entry for its later frames.
        let later_frames = expect > 0 && have.len() < expect;
        if later_frames {
            self.inbound.insert((u.peer, u.env.msg_id), Target::Recv(id));
        }
        self.place(id, u.peer, u.env.msg_id, 0, have);
    }

    fn handle_data(&mut self, peer: PeerId, msg_id: u64, offset: u64, payload: &[u8]) {
        match self.inbound.get(&(peer, msg_id)).copied() {
            Some(Target::Recv(id)) => self.place(id, peer, msg_id, offset, payload),
            Some(Target::Unexpected) => {
                let Some(b) = self.unexpected_data.get_mut(&(peer, msg_id)) else {
                    return self.bad_frame(peer, "data for a vanished message");
                };
                if offset as usize != b.got || b.got + payload.len() > b.total {
                    return self.bad_frame(peer, "data outside its message");
                }
                b.data.extend_from_slice(payload);
                b.got += payload.len();
                if b.got == b.total {
                    self.inbound.remove(&(peer, msg_id));
                }
            }
            None => self.bad_frame(peer, "data for an unknown message"),
        }
    }

    /// Copies `payload` at `offset` into the receive's buffer (what fits),
    /// completing the receive when all expected bytes are in.
    fn place(&mut self, id: RequestId, peer: PeerId, msg_id: u64, offset: u64, payload: &[u8]) {
        let Some(Request { kind: ReqKind::Recv(r), .. }) = self.reqs.get_mut(id) else {
            self.inbound.remove(&(peer, msg_id));
            return;
        };
        let RecvPhase::Receiving { got, expect } = r.phase else { return };
        let offset = offset as usize;
        if offset.saturating_add(payload.len()) > expect || offset != got {
            return self.bad_frame(peer, "data outside its message");
        }
        let fits = r.buf.cap.saturating_sub(offset).min(payload.len());
        if fits > 0 {
            // SAFETY: the receive contract keeps `buf` valid; bounds checked above.
            unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), r.buf.ptr.add(offset), fits) };
        }
        let got = got + payload.len();
        self.stats.bytes_received += payload.len() as u64;
        if got == expect {
            r.phase = RecvPhase::Done;
            let status = r.status.clone();
            self.inbound.remove(&(peer, msg_id));
            self.complete(id, status);
        } else {
            r.phase = RecvPhase::Receiving { got, expect };
        }
    }
}
