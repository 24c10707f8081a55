//! MPI_Send's short cut for a short message on a contiguous type: the
//! engine writes it to the transport as one frame from the user's buffer
//! (`Engine::express_send`), without building the checked send, a request
//! or a protocol plan. On shared memory this and the express receive
//! (`express.rs`) are a one-byte message's whole path.
//!
//! Taken only when every argument is plainly valid; anything else (a bad
//! argument included) goes the ordinary way, which reports it.

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::comm::CommId;
use crate::reqtable::TAG_UB;
use crate::runtime::{Runtime, State};

impl Runtime {
    /// `Some` when the message left by the express path (or the transport
    /// failed on it); `None`: send it the ordinary way, nothing changed.
    /// Runs under the caller's lock.
    ///
    /// # Safety
    /// `buf` must hold `count` elements of `dt`.
    pub(crate) unsafe fn express_send(
        st: &mut State,
        buf: *const u8,
        count: usize,
        dt: &Datatype,
        dest: i32,
        tag: i32,
        comm: CommId,
    ) -> Option<MpiResult<()>> {
        if !(0..=TAG_UB).contains(&tag) || !dt.is_committed() || !dt.is_contiguous() {
            return None;
        }
        let len = count.checked_mul(dt.size())?;
        let c = st.comms.get(comm).filter(|c| !c.revoked)?;
        // MPI_PROC_NULL and ranks outside the group fail here: the ordinary path.
        let world = c.peer_group().world(usize::try_from(dest).ok()?)?;
        let ctx = c.p2p_ctx();
        let payload: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: the caller's contract: a contiguous type's `len` bytes start at its true lower bound.
            unsafe { std::slice::from_raw_parts(buf.wrapping_offset(dt.true_lb()), len) }
        };
        let State { engine, transport, .. } = st;
        if let Err(e) = engine.express_send(world, ctx, tag, payload, &mut |p, c, parts| transport.try_send(p, c, parts))? {
            return Some(Err(e));
        }
        st.activity += 1;
        // What the transport took may sit in its buffer (tcp): push it on.
        match st.transport.flush() {
            Ok(busy) => st.transport_busy = busy,
            Err(e) => return Some(Err(MpiError::new(ErrorClass::Other, format!("transport: {e}")))),
        }
        Some(Ok(()))
    }
}
