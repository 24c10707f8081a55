//! What the tool interface (MPI_T, crates/mpi-capi/src/mpit/) reads of the
//! engine beyond its counters, and the one knob it may turn at run time:
//! the eager limit of this process's sends.

use super::Engine;

impl Engine {
    /// Messages waiting in the unexpected queue now.
    pub fn unexpected_queue_len(&self) -> usize {
        self.matcher.unexpected_len()
    }

    /// Receives posted and not yet matched now.
    pub fn posted_queue_len(&self) -> usize {
        self.matcher.posted_len()
    }

    /// The eager limit this process's sends use now.
    pub fn eager_limit(&self) -> usize {
        self.send_eager
    }

    /// Sets the eager limit of this process's sends from now on. Only down
    /// to 0 and up to the limit the job started with: every receiver
    /// accepts eager messages up to that one (`recv.rs`, `arrive`), so a
    /// larger one would be refused as a protocol violation. Messages already
    /// planned keep their protocol. Err carries the largest value allowed.
    pub fn set_eager_limit(&mut self, bytes: usize) -> Result<(), usize> {
        if bytes > self.cfg.eager_limit {
            return Err(self.cfg.eager_limit);
        }
        self.send_eager = bytes;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Engine, SendMode};
    use crate::request::SendData;
    use crate::EngineConfig;
    use wanmpi_transport::Caps;

    fn engine() -> Engine {
        let caps = Caps { name: "test", channels: 1, max_frame: 64 * 1024, eager_limit_hint: 0, reliable: true };
        Engine::new(0, 2, caps, EngineConfig { eager_limit: 4096, recv_credits: false, ..EngineConfig::default() })
    }

    #[test]
    fn a_lowered_eager_limit_sends_by_rendezvous_and_cannot_rise_past_the_start() {
        let mut e = engine();
        let data = [0u8; 2048];
        // SAFETY: `data` outlives the engine's use of it in this test.
        unsafe { e.isend(1, 0, 0, SendData::Raw { ptr: data.as_ptr(), len: data.len() }, SendMode::Standard) }.unwrap();
        assert_eq!((e.stats().eager_sends, e.stats().rendezvous_sends), (1, 0));
        assert_eq!(e.set_eager_limit(1024), Ok(()));
        assert_eq!(e.eager_limit(), 1024);
        unsafe { e.isend(1, 0, 0, SendData::Raw { ptr: data.as_ptr(), len: data.len() }, SendMode::Standard) }.unwrap();
        assert_eq!((e.stats().eager_sends, e.stats().rendezvous_sends), (1, 1));
        assert_eq!(e.set_eager_limit(4097), Err(4096));
        assert_eq!(e.stats().sent_to[1].msgs, 2);
        assert_eq!(e.stats().sent_to[1].bytes, 4096);
    }
}
