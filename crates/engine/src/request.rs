//! Requests: the state of every send and receive in flight, kept in a slab
//! and named by `RequestId` (an index plus a generation, so a stale id is
//! detected instead of aliasing a newer request).

use crate::error::MpiError;
use crate::protocol::Protocol;
use wanmpi_transport::PeerId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId {
    index: u32,
    generation: u32,
}

impl RequestId {
    /// The id as one integer (also the message id on the wire for sends).
    pub fn to_u64(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }
    pub fn from_u64(v: u64) -> RequestId {
        RequestId { index: v as u32, generation: (v >> 32) as u32 }
    }
}

/// What a completed request reports (MPI_Status, in engine terms: the source
/// is a world rank; the runtime translates it into the communicator's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub source: PeerId,
    pub tag: i32,
    /// Bytes delivered into the receive buffer.
    pub bytes: usize,
    pub error: Option<MpiError>,
    pub cancelled: bool,
}

impl Status {
    pub fn empty() -> Status {
        Status { source: PeerId::MAX, tag: -1, bytes: 0, error: None, cancelled: false }
    }
}

/// The bytes a send reads. `Raw` points into the caller's buffer, which must
/// stay valid and unchanged until the request completes.
pub enum SendData {
    Raw { ptr: *const u8, len: usize },
    Owned(Vec<u8>),
}

impl SendData {
    pub fn len(&self) -> usize {
        match self {
            SendData::Raw { len, .. } => *len,
            SendData::Owned(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where the bytes start in this process's memory: what a single-copy
    /// send tells its receiver, which reads them from there. An owned
    /// buffer (a packed non-contiguous send) lives in the request, on the
    /// heap, and does not move until the request is gone.
    pub fn addr(&self) -> u64 {
        match self {
            SendData::Raw { ptr, .. } => *ptr as u64,
            SendData::Owned(v) => v.as_ptr() as u64,
        }
    }
    /// # Safety
    /// For `Raw`, the caller's buffer must still be valid (the send's contract).
    pub unsafe fn slice(&self, from: usize, to: usize) -> &[u8] {
        match self {
            SendData::Raw { ptr, .. } if to > from => std::slice::from_raw_parts(ptr.add(from), to - from),
            SendData::Raw { .. } => &[],
            SendData::Owned(v) => &v[from..to],
        }
    }
}

// Raw pointers are only dereferenced under the send contract above; the
// engine itself moves between threads only behind the runtime's lock.
unsafe impl Send for SendData {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendPhase {
    /// Waiting in the peer's queue for its first frame to go.
    Queued,
    /// RTS sent; waiting for clear-to-send.
    AwaitCts,
    /// Data frames going out: next offset and end.
    Streaming {
        next: usize,
        end: usize,
    },
    /// Everything sent; a synchronous send waits for the receiver's match.
    AwaitSyncAck,
    Done,
}

pub struct SendReq {
    pub dest: PeerId,
    pub ctx: u32,
    pub tag: i32,
    pub seq: u64,
    pub channel: u16,
    pub data: SendData,
    pub sync: bool,
    pub proto: Protocol,
    pub phase: SendPhase,
    /// A synchronous eager send's acknowledgement may arrive before its last
    /// frame left (it is acknowledged on match).
    pub acked: bool,
}

/// Where a receive puts its bytes.
#[derive(Debug, Clone, Copy)]
pub struct RecvBuf {
    pub ptr: *mut u8,
    pub cap: usize,
}

unsafe impl Send for RecvBuf {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvPhase {
    /// In the posted queue, not matched yet.
    Posted,
    /// Matched a message whose data is still arriving.
    Receiving {
        got: usize,
        expect: usize,
    },
    Done,
}

pub struct RecvReq {
    /// `None` = MPI_ANY_SOURCE.
    pub src: Option<PeerId>,
    pub ctx: u32,
    /// `None` = MPI_ANY_TAG.
    pub tag: Option<i32>,
    pub buf: RecvBuf,
    pub phase: RecvPhase,
    /// Filled at match time.
    pub status: Status,
}

pub enum ReqKind {
    Send(SendReq),
    Recv(RecvReq),
}

pub struct Request {
    pub kind: ReqKind,
    pub complete: bool,
    pub status: Status,
    /// MPI_Request_free was called: drop the request when it completes.
    pub detached: bool,
}

/// A slab of requests with generation-checked ids.
#[derive(Default)]
pub struct Requests {
    slots: Vec<(u32, Option<Request>)>,
    free: Vec<u32>,
    live: usize,
}

impl Requests {
    pub fn insert(&mut self, r: Request) -> RequestId {
        self.live += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            // 31 bits: a message id with the top bit set is never a
            // request's (see `Engine::send_now`).
            slot.0 = slot.0.wrapping_add(1) & 0x7fff_ffff;
            slot.1 = Some(r);
            RequestId { index, generation: slot.0 }
        } else {
            self.slots.push((0, Some(r)));
            RequestId { index: (self.slots.len() - 1) as u32, generation: 0 }
        }
    }

    pub fn get(&self, id: RequestId) -> Option<&Request> {
        match self.slots.get(id.index as usize) {
            Some((g, Some(r))) if *g == id.generation => Some(r),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, id: RequestId) -> Option<&mut Request> {
        match self.slots.get_mut(id.index as usize) {
            Some((g, Some(r))) if *g == id.generation => Some(r),
            _ => None,
        }
    }

    pub fn remove(&mut self, id: RequestId) -> Option<Request> {
        match self.slots.get_mut(id.index as usize) {
            Some((g, slot @ Some(_))) if *g == id.generation => {
                self.free.push(id.index);
                self.live -= 1;
                slot.take()
            }
            _ => None,
        }
    }

    /// Requests not yet removed (completed-but-untested ones included).
    pub fn live(&self) -> usize {
        self.live
    }

    pub fn ids(&self) -> Vec<RequestId> {
        self.slots.iter().enumerate().filter(|(_, (_, r))| r.is_some()).map(|(i, (g, _))| RequestId { index: i as u32, generation: *g }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dummy() -> Request {
        Request {
            kind: ReqKind::Recv(RecvReq {
                src: None,
                ctx: 0,
                tag: None,
                buf: RecvBuf { ptr: std::ptr::null_mut(), cap: 0 },
                phase: RecvPhase::Posted,
                status: Status::empty(),
            }),
            complete: false,
            status: Status::empty(),
            detached: false,
        }
    }

    #[test]
    fn stale_ids_do_not_alias_reused_slots() {
        let mut s = Requests::default();
        let a = s.insert(dummy());
        assert!(s.remove(a).is_some());
        let b = s.insert(dummy());
        assert_ne!(a, b);
        assert!(s.get(a).is_none());
        assert!(s.get(b).is_some());
        assert_eq!(RequestId::from_u64(b.to_u64()), b);
        assert_eq!(s.live(), 1);
    }
}
