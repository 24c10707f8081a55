//! The sending side: posting sends, choosing the protocol, the per-peer
//! output queues and their fair interleaving, and the frames that answer a
//! send (clear-to-send, synchronous acknowledgement, receive credits).

use wanmpi_transport::{PeerId, SendStatus, TransportError};
use wanmpi_wire::{flags, Envelope, Frame, HeaderBuf};

use super::{Credit, Engine, OutItem};
use crate::error::{err, ErrorClass, MpiResult};
use crate::protocol::{self, Protocol};
use crate::request::{ReqKind, Request, RequestId, SendData, SendPhase, SendReq, Status};

/// MPI send modes that change the protocol (ready and buffered sends are
/// handled above the engine: they travel as standard sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    /// MPI_Ssend: completes only after the receiver matched.
    Synchronous,
}

/// Message ids of sends that never had a request (`Engine::send_now`).
pub(super) const EXPRESS_ID: u64 = 1 << 63;

/// A send checked and numbered, not yet queued.
struct PlannedSend {
    dest: PeerId,
    ctx: u32,
    tag: i32,
    seq: u64,
    channel: u16,
    proto: Protocol,
    sync: bool,
}

/// The transport's send call as [`Engine::transmit`] uses it: hands one
/// frame (as a list of byte slices) to `peer` on `channel`.
pub type FrameSink<'a> = dyn FnMut(PeerId, u16, &[&[u8]]) -> Result<SendStatus, TransportError> + 'a;

impl Engine {
    /// Starts a send of `data` to world rank `dest` on context `ctx`.
    ///
    /// # Safety
    /// A `SendData::Raw` buffer must stay valid and unchanged until the
    /// request completes.
    pub unsafe fn isend(&mut self, dest: PeerId, ctx: u32, tag: i32, data: SendData, mode: SendMode) -> MpiResult<RequestId> {
        let p = self.plan_send(dest, ctx, tag, data.len(), mode)?;
        Ok(self.queue_send(p, data))
    }

    /// A blocking standard send's short cut: a message that fits one frame
    /// goes to the transport at once when nothing is queued before it to
    /// `dest`, and needs no request. `Ok(None)` when it left; otherwise it
    /// is queued like `isend` and its request returned.
    ///
    /// # Safety
    /// As `isend`.
    pub unsafe fn send_now(&mut self, dest: PeerId, ctx: u32, tag: i32, data: SendData, send: &mut FrameSink<'_>) -> MpiResult<Option<RequestId>> {
        let p = self.plan_send(dest, ctx, tag, data.len(), SendMode::Standard)?;
        let len = data.len();
        if p.proto != Protocol::Eager || len > self.chunk() || !self.out[dest as usize].is_empty() {
            return Ok(Some(self.queue_send(p, data)));
        }
        // Its own id space (top bit set): the receiver keys buffered
        // unexpected data by (sender, message id).
        self.express_ids = self.express_ids.wrapping_add(1);
        let env = Envelope { ctx, tag, seq: p.seq, msg_id: EXPRESS_ID | self.express_ids, total_len: len as u64 };
        let mut header = HeaderBuf::new();
        Frame::Eager { env, flags: 0, payload: &[] }.emit_header(&mut header);
        // SAFETY: the caller keeps the buffer valid for this call.
        let payload = unsafe { data.slice(0, len) };
        match send(dest, p.channel, &[header.as_slice(), payload]) {
            Ok(SendStatus::Sent) => Ok(None),
            Ok(SendStatus::WouldBlock) => Ok(Some(self.queue_send(p, data))),
            Err(e) => err(ErrorClass::Other, format!("transport: {e}")),
        }
    }

    /// Checks a send and settles its sequence number, credit and protocol.
    fn plan_send(&mut self, dest: PeerId, ctx: u32, tag: i32, len: usize, mode: SendMode) -> MpiResult<PlannedSend> {
        if dest >= self.size {
            return err(ErrorClass::Rank, format!("destination {dest} is not a process of this job (size {})", self.size));
        }
        if let Some(reason) = self.lost.get(&dest) {
            return err(ErrorClass::ProcFailed, format!("rank {dest} is lost: {reason}"));
        }
        let seq_slot = self.next_seq.entry((dest, ctx)).or_insert(0);
        let seq = *seq_slot;
        *seq_slot += 1;
        let credit = self.take_credit(dest, ctx, tag, len);
        let proto = protocol::select(len, self.send_eager, self.single_copy_from(dest), credit, self.window.available(dest));
        match proto {
            Protocol::SingleCopy => self.stats.single_copy_sends += 1,
            Protocol::Eager => self.stats.eager_sends += 1,
            Protocol::Credited => self.stats.credited_sends += 1,
            Protocol::Windowed => {
                self.window.spend(dest, len as u64);
                self.stats.windowed_sends += 1;
            }
            Protocol::Rendezvous => self.stats.rendezvous_sends += 1,
        }
        self.stats.msgs_sent += 1;
        self.stats.bytes_sent += len as u64;
        self.stats.count_sent(dest, len);
        let channel = self.channel_for(ctx, tag);
        Ok(PlannedSend { dest, ctx, tag, seq, channel, proto, sync: mode == SendMode::Synchronous })
    }

    /// Makes the request of a planned send and queues it to its peer.
    fn queue_send(&mut self, p: PlannedSend, data: SendData) -> RequestId {
        let PlannedSend { dest, ctx, tag, seq, channel, proto, sync } = p;
        let id = self.reqs.insert(Request {
            kind: ReqKind::Send(SendReq { dest, ctx, tag, seq, channel, data, sync, proto, phase: SendPhase::Queued, acked: false }),
            complete: false,
            status: Status::empty(),
            detached: false,
        });
        self.out[dest as usize].push_back(OutItem::Message(id));
        self.out_maybe = true;
        id
    }

    /// Consumes the oldest credit of `dest` that a message on (ctx, tag)
    /// would use, returning its capacity. A short message consumes a credit
    /// too when it names the credit's tag: it will most likely take that
    /// receive, and the credit must not be spent twice.
    fn take_credit(&mut self, dest: PeerId, ctx: u32, tag: i32, len: usize) -> Option<u64> {
        let q = &mut self.credits[dest as usize];
        let i = q.iter().position(|c| c.ctx == ctx && c.tag.is_none_or(|t| t == tag))?;
        let c = q.remove(i)?;
        (len > self.send_eager && c.capacity >= len as u64).then_some(c.capacity)
    }

    /// Queues a small control frame to `peer`.
    pub(super) fn queue_control(&mut self, peer: PeerId, channel: u16, frame: Frame<'_>) {
        self.out[peer as usize].push_back(OutItem::Control { channel, bytes: frame.to_vec() });
        self.out_maybe = true;
    }

    /// Announces a posted receive to its source (see `protocol`).
    pub(super) fn announce_credit(&mut self, src: PeerId, ctx: u32, tag: Option<i32>, capacity: usize) {
        if !self.cfg.recv_credits || capacity <= self.cfg.eager_limit || self.lost.contains_key(&src) {
            return;
        }
        // Every message a credit could carry comes by single copy instead.
        if self.single_copy_from(src).is_some_and(|from| from <= self.cfg.eager_limit + 1) {
            return;
        }
        let channel = self.channel_for(ctx, tag.unwrap_or(0));
        let frame = Frame::RecvCredit { ctx, tag: tag.unwrap_or(wanmpi_wire::ANY_TAG), capacity: capacity as u64 };
        self.queue_control(src, channel, frame);
        let max = &mut self.announced_max[src as usize];
        *max = (*max).max(capacity as u64);
        self.stats.credits_announced += 1;
    }

    pub(super) fn handle_credit(&mut self, peer: PeerId, ctx: u32, tag: i32, capacity: u64) {
        let tag = (tag != wanmpi_wire::ANY_TAG).then_some(tag);
        self.credits[peer as usize].push_back(Credit { ctx, tag, capacity });
    }

    /// Hands queued frames to `send` (the transport) until it refuses or the
    /// queues are empty. Multi-frame messages take turns, one frame each, so a
    /// short message never waits behind a whole long one.
    pub fn transmit(&mut self, send: &mut FrameSink<'_>) -> Result<(), TransportError> {
        if !self.out_maybe {
            return Ok(());
        }
        for peer in 0..self.size {
            while let Some(item) = self.out[peer as usize].pop_front() {
                match self.transmit_one(peer, item, send)? {
                    None => {}
                    Some(back) => {
                        self.out[peer as usize].push_front(back);
                        break;
                    }
                }
            }
        }
        self.out_maybe = self.out.iter().any(|q| !q.is_empty());
        Ok(())
    }

    /// Sends one frame of `item`. Returns the item back when the transport
    /// would block; requeues unfinished messages at the tail.
    fn transmit_one(&mut self, peer: PeerId, item: OutItem, send: &mut FrameSink<'_>) -> Result<Option<OutItem>, TransportError> {
        let id = match item {
            OutItem::Control { channel, ref bytes } => {
                return Ok(match send(peer, channel, &[bytes])? {
                    SendStatus::Sent => None,
                    SendStatus::WouldBlock => Some(item),
                });
            }
            OutItem::Message(id) => id,
        };
        let chunk = self.chunk();
        let Some(Request { kind: ReqKind::Send(s), .. }) = self.reqs.get_mut(id) else {
            return Ok(None); // cancelled or failed meanwhile
        };
        let len = s.data.len();
        let env = Envelope { ctx: s.ctx, tag: s.tag, seq: s.seq, msg_id: id.to_u64(), total_len: len as u64 };
        let sync = if s.sync { flags::SYNC } else { 0 } | if s.proto == Protocol::Windowed { flags::WINDOW } else { 0 };
        let mut header = HeaderBuf::new();
        // What this frame covers of the data, and the phase after it.
        let (from, to, next_phase) = match (s.phase, s.proto) {
            (SendPhase::Queued, Protocol::Rendezvous) => {
                Frame::Rts { env, flags: sync }.emit_header(&mut header);
                (0, 0, SendPhase::AwaitCts)
            }
            (SendPhase::Queued, Protocol::SingleCopy) => {
                Frame::RtsLocal { env, flags: sync, addr: s.data.addr() }.emit_header(&mut header);
                (0, 0, SendPhase::AwaitCts)
            }
            (SendPhase::Queued, _) => {
                let to = len.min(chunk);
                let more = if to < len { flags::PUSH } else { 0 };
                Frame::Eager { env, flags: sync | more, payload: &[] }.emit_header(&mut header);
                (0, to, if to < len { SendPhase::Streaming { next: to, end: len } } else { all_sent(s.proto, s.sync) })
            }
            (SendPhase::Streaming { next, end }, _) => {
                let to = end.min(next + chunk);
                Frame::Data { msg_id: env.msg_id, offset: next as u64, payload: &[] }.emit_header(&mut header);
                (next, to, if to < end { SendPhase::Streaming { next: to, end } } else { all_sent(s.proto, s.sync) })
            }
            _ => return Ok(None),
        };
        // SAFETY: the send contract keeps the buffer valid until completion.
        let payload = unsafe { s.data.slice(from, to) };
        let channel = s.channel;
        match send(peer, channel, &[header.as_slice(), payload])? {
            SendStatus::WouldBlock => return Ok(Some(OutItem::Message(id))),
            SendStatus::Sent => {}
        }
        let acked = s.acked;
        s.phase = match next_phase {
            SendPhase::AwaitSyncAck if acked => SendPhase::Done,
            p => p,
        };
        match s.phase {
            SendPhase::Streaming { .. } => {
                self.out[peer as usize].push_back(OutItem::Message(id));
                self.out_maybe = true;
            }
            SendPhase::Done => self.complete(id, Status::empty()),
            _ => {}
        }
        Ok(None)
    }

    /// The receiver matched our RTS and takes `accept_len` bytes.
    pub(super) fn handle_cts(&mut self, peer: PeerId, msg_id: u64, accept_len: u64) {
        let id = RequestId::from_u64(msg_id);
        let Some(Request { kind: ReqKind::Send(s), .. }) = self.reqs.get_mut(id) else {
            return self.bad_frame(peer, "clear-to-send for an unknown message");
        };
        if s.dest != peer || s.phase != SendPhase::AwaitCts || accept_len > s.data.len() as u64 {
            return self.bad_frame(peer, "clear-to-send that does not fit its message");
        }
        let end = accept_len as usize;
        if s.proto == Protocol::SingleCopy {
            self.single_copy_declined(peer);
        }
        let Some(Request { kind: ReqKind::Send(s), .. }) = self.reqs.get_mut(id) else { return };
        if end == 0 {
            s.phase = SendPhase::Done;
            self.complete(id, Status::empty());
        } else {
            s.phase = SendPhase::Streaming { next: 0, end };
            self.out[peer as usize].push_back(OutItem::Message(id));
            self.out_maybe = true;
        }
    }

    /// The receiver matched our synchronous eager send.
    pub(super) fn handle_sync_ack(&mut self, peer: PeerId, msg_id: u64) {
        let id = RequestId::from_u64(msg_id);
        let Some(Request { kind: ReqKind::Send(s), .. }) = self.reqs.get_mut(id) else {
            return self.bad_frame(peer, "acknowledgement for an unknown message");
        };
        if s.dest != peer || !s.sync {
            return self.bad_frame(peer, "acknowledgement for a message that asked none");
        }
        s.acked = true;
        if s.phase == SendPhase::AwaitSyncAck {
            s.phase = SendPhase::Done;
            self.complete(id, Status::empty());
        }
    }
}

/// The phase once every byte of a message has left. A rendezvous send (or
/// a single-copy one the receiver asked for by clear-to-send) was matched
/// before its data left; an eager or credited synchronous send still waits
/// for the receiver's acknowledgement.
fn all_sent(proto: Protocol, sync: bool) -> SendPhase {
    if sync && !matches!(proto, Protocol::Rendezvous | Protocol::SingleCopy) {
        SendPhase::AwaitSyncAck
    } else {
        SendPhase::Done
    }
}
