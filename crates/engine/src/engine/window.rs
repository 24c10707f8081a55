//! The WAN window: receive buffer a process grants a far peer for long
//! messages that arrive before their receive is posted.
//!
//! Across a WAN a rendezvous costs a round trip per long message, and a
//! receive is rarely posted early enough for a receive credit (a manager
//! that probes, then receives). So a receiver grants each far peer a window
//! of bytes (`Grant` frames); the sender spends it on long messages it sends
//! eagerly (flag `WINDOW`), and the receiver gives each message's length
//! back once a receive has taken it. When the window is spent the sender
//! falls back to the rendezvous, so the receiver never holds more than it
//! granted: an arrival beyond the grant is a protocol violation, dropped.

use wanmpi_transport::PeerId;
use wanmpi_wire::Frame;

use super::Engine;

/// Both sides of the window, per peer.
#[derive(Debug, Default)]
pub(super) struct Windows {
    /// Sender side: bytes each peer still lets us send unannounced.
    avail: Vec<u64>,
    /// Receiver side: bytes granted to each peer so far (the bound).
    granted: Vec<u64>,
    /// Receiver side: bytes of windowed messages from each peer that no
    /// receive has taken yet.
    held: Vec<u64>,
}

impl Windows {
    pub(super) fn new(size: u32) -> Windows {
        let z = vec![0; size as usize];
        Windows { avail: z.clone(), granted: z.clone(), held: z }
    }

    /// Room for peers joined later (dynamic processes): they start with no
    /// window either way.
    pub(super) fn grow(&mut self, size: u32) {
        for v in [&mut self.avail, &mut self.granted, &mut self.held] {
            v.resize(size as usize, 0);
        }
    }

    /// What a message to `peer` may spend now.
    pub(super) fn available(&self, peer: PeerId) -> u64 {
        self.avail[peer as usize]
    }

    pub(super) fn spend(&mut self, peer: PeerId, len: u64) {
        let a = &mut self.avail[peer as usize];
        *a = a.saturating_sub(len);
    }

    /// Whether a windowed message of `len` bytes from `peer` fits what we granted.
    fn fits(&self, peer: PeerId, len: u64) -> bool {
        self.held[peer as usize].saturating_add(len) <= self.granted[peer as usize]
    }

    /// Holds `len` more bytes from `peer`; returns what is held now.
    fn hold(&mut self, peer: PeerId, len: u64) -> u64 {
        let h = &mut self.held[peer as usize];
        *h += len;
        *h
    }

    pub(super) fn release(&mut self, peer: PeerId, len: u64) {
        let h = &mut self.held[peer as usize];
        *h = h.saturating_sub(len);
    }
}

impl Engine {
    /// Grants `peer` a WAN window of `bytes` in total (only ever grows).
    /// The runtime calls this for peers it measured far away.
    pub fn grant_window(&mut self, peer: PeerId, bytes: u64) {
        if peer >= self.size || peer == self.rank || self.lost.contains_key(&peer) {
            return;
        }
        let g = self.window.granted[peer as usize];
        if bytes > g {
            self.window.granted[peer as usize] = bytes;
            self.stats.windows.entry(peer).or_default().granted = bytes;
            self.queue_control(peer, 0, Frame::Grant { bytes: bytes - g });
        }
    }

    /// The window `peer` granted us and we have not spent.
    pub fn window_available(&self, peer: PeerId) -> u64 {
        self.window.available(peer)
    }

    /// The window granted to `peer` (0: none).
    pub fn window_granted(&self, peer: PeerId) -> u64 {
        self.window.granted.get(peer as usize).copied().unwrap_or(0)
    }

    pub(super) fn handle_grant(&mut self, peer: PeerId, bytes: u64) {
        let a = &mut self.window.avail[peer as usize];
        *a = a.saturating_add(bytes);
    }

    /// A windowed envelope arrived: false if it overruns the grant.
    pub(super) fn admit_windowed(&mut self, peer: PeerId, len: u64) -> bool {
        if !self.window.fits(peer, len) {
            return false;
        }
        let held = self.window.hold(peer, len);
        let w = self.stats.windows.entry(peer).or_default();
        w.peak_held = w.peak_held.max(held);
        true
    }

    /// A receive took a windowed message: its bytes go back to the sender.
    pub(super) fn return_window(&mut self, peer: PeerId, len: u64) {
        self.window.release(peer, len);
        if len > 0 && !self.lost.contains_key(&peer) {
            self.queue_control(peer, 0, Frame::Grant { bytes: len });
        }
    }
}
