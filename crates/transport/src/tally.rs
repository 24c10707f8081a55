//! What a transport counted toward one peer, for the tool interface
//! (`MPI_T` performance variables, crates/mpi-capi/src/mpit/): which
//! transport carried how much, and what it had to do again.

/// One transport's counts toward one peer since the job started. Counters
/// only grow.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Frames (the engine's units) handed over and their bytes, headers
    /// included. Zero when only a composite above knows them (it fills them).
    pub frames_sent: u64,
    pub bytes_sent: u64,
    pub frames_received: u64,
    pub bytes_received: u64,
    /// Segments, chunks or packets sent again after a loss.
    pub retransmits: u64,
    /// Lost packets rebuilt from repair packets without a resend (wamp's FEC).
    pub repairs: u64,
}

impl Tally {
    /// Whether this tally says anything about frames (a composite's parts
    /// count only what they repeat; the composite counts the frames).
    pub fn counts_frames(&self) -> bool {
        self.frames_sent != 0 || self.frames_received != 0
    }

    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &Tally) {
        self.frames_sent += o.frames_sent;
        self.bytes_sent += o.bytes_sent;
        self.frames_received += o.frames_received;
        self.bytes_received += o.bytes_received;
        self.retransmits += o.retransmits;
        self.repairs += o.repairs;
    }
}

/// Where `Transport::tally` reports: once per transport (by its `Caps::name`)
/// that carries frames to the peer asked about.
pub type TallySink<'a> = dyn FnMut(&'static str, Tally) + 'a;
