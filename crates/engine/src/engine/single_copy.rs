//! Single copy between processes of one host: the receiver reads a long
//! message straight out of the sender's memory (cross-memory attach,
//! `process_vm_readv`) instead of the sender copying it into the shared
//! ring and the receiver copying it out.
//!
//! The exchange: the sender's `RtsLocal` carries the envelope and the
//! address of its bytes (its own buffer, or the staging buffer its request
//! owns for a non-contiguous send); it is matched like any request-to-send.
//! Once matched the receiver reads `min(length, capacity)` bytes into its
//! buffer and answers `ReadDone`, which completes the send. The engine does
//! no I/O: the read goes through a `LocalRead` the runtime gives it
//! (`set_local_read`), which does the system call.
//!
//! When the read is refused (Yama, seccomp, a container, no such system
//! call) the receiver answers clear-to-send instead and the message travels
//! as an ordinary rendezvous; both sides then remember that peer and never
//! try again (`no_single_copy`); a read that fails or comes back short
//! for another reason is treated the same. A sender that died before or
//! during the read fails the receive naming it. Bytes read are only
//! reported once the whole read succeeded, so a receive never completes
//! with bytes of a dead process.

use wanmpi_transport::PeerId;
use wanmpi_wire::{Envelope, Frame};

use super::Engine;
use crate::error::{ErrorClass, MpiError};
use crate::request::{ReqKind, Request, RequestId, SendPhase, Status};

/// Reads bytes out of another process of this host. The runtime's
/// implementation calls `process_vm_readv` on the peer's pid; engine tests
/// use a fake.
pub trait LocalRead: Send {
    /// Whether `peer` runs on this host and its memory may be read at all
    /// (the transport knows and checked its process).
    fn reaches(&self, peer: PeerId) -> bool;
    /// Fills `local` with the bytes at `remote` in `peer`'s memory, all or
    /// an error.
    fn read(&mut self, peer: PeerId, remote: u64, local: &mut [u8]) -> Result<(), ReadError>;
}

/// Why a `LocalRead::read` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The kernel does not let us read that process (EPERM, ENOSYS, ...):
    /// no later read will do better.
    #[error("reading the peer's memory is refused: {0}")]
    Refused(String),
    /// The process is gone (or its pid now names another process).
    #[error("the process exited: {0}")]
    Gone(String),
    /// This read failed (a bad address, a short read).
    #[error("{0}")]
    Failed(String),
}

impl Engine {
    /// Gives the engine the reader of local processes' memory: from now on
    /// long messages to peers it `reaches` go by single copy.
    pub fn set_local_read(&mut self, reader: Box<dyn LocalRead>) {
        self.local_read = Some(reader);
    }

    /// The single-copy threshold towards `peer`, if single copy is possible.
    pub(super) fn single_copy_from(&self, peer: PeerId) -> Option<usize> {
        let reader = self.local_read.as_ref()?;
        (peer != self.rank && !self.no_single_copy.contains(&peer) && reader.reaches(peer)).then_some(self.cfg.single_copy_from)
    }

    /// An `RtsLocal` arrived: remember where its bytes are, then match it
    /// as a request-to-send.
    pub(super) fn handle_rts_local(&mut self, peer: PeerId, env: Envelope, sync: bool, addr: u64) {
        self.offers.insert((peer, env.msg_id), addr);
        self.arrive_rts(peer, env, sync);
    }

    /// A receive matched a request-to-send: if it offered its bytes for
    /// reading, read them. True when the receive is settled (read, or
    /// failed); false when the message must be asked for by clear-to-send.
    pub(super) fn take_offer(&mut self, id: RequestId, peer: PeerId, msg_id: u64, expect: usize, channel: u16) -> bool {
        let Some(addr) = self.offers.remove(&(peer, msg_id)) else { return false };
        if self.no_single_copy.contains(&peer) {
            return false;
        }
        let Some(Request { kind: ReqKind::Recv(r), .. }) = self.reqs.get_mut(id) else { return true };
        let buf = r.buf;
        let Some(reader) = self.local_read.as_mut() else { return false };
        let result = if expect == 0 {
            Ok(())
        } else {
            // SAFETY: the receive contract keeps `buf` valid for `cap`
            // bytes, and `expect <= cap` (start_delivery).
            let local = unsafe { std::slice::from_raw_parts_mut(buf.ptr, expect) };
            reader.read(peer, addr, local)
        };
        match result {
            Ok(()) => {
                self.stats.single_copy_reads += 1;
                self.stats.bytes_received += expect as u64;
                let status = r.status.clone();
                r.phase = crate::request::RecvPhase::Done;
                self.queue_control(peer, channel, Frame::ReadDone { msg_id });
                self.complete(id, status);
                true
            }
            Err(ReadError::Gone(why)) => {
                let e = MpiError::new(ErrorClass::ProcFailed, format!("rank {peer} is lost: its message could not be read: {why}"));
                self.fail(id, e);
                true
            }
            Err(ReadError::Refused(why) | ReadError::Failed(why)) => {
                // Decided once per peer, whatever the cause: a short read
                // is as untrustworthy as a refusal. The sender learns it
                // from our clear-to-send.
                if self.no_single_copy.insert(peer) {
                    self.stats.single_copy_refused += 1;
                    if std::env::var_os("WANMPI_DEBUG").is_some() {
                        eprintln!("wanmpi: rank {}: single copy from rank {peer} failed ({why}); rendezvous from now on", self.rank);
                    }
                }
                false
            }
        }
    }

    /// The receiver read our message.
    pub(super) fn handle_read_done(&mut self, peer: PeerId, msg_id: u64) {
        let id = RequestId::from_u64(msg_id);
        let Some(Request { kind: ReqKind::Send(s), .. }) = self.reqs.get_mut(id) else {
            return self.bad_frame(peer, "read-done for an unknown message");
        };
        if s.dest != peer || s.phase != SendPhase::AwaitCts || s.proto != crate::protocol::Protocol::SingleCopy {
            return self.bad_frame(peer, "read-done for a message that offered no read");
        }
        s.phase = SendPhase::Done;
        self.complete(id, Status::empty());
    }

    /// A clear-to-send answered our `RtsLocal`: the receiver could not read
    /// us. Send long messages to it the ordinary way from now on.
    pub(super) fn single_copy_declined(&mut self, peer: PeerId) {
        self.no_single_copy.insert(peer);
    }

    /// A lost peer's offers can never be read.
    pub(super) fn forget_offers_of(&mut self, peer: PeerId) {
        self.offers.retain(|(p, _), _| *p != peer);
    }
}
