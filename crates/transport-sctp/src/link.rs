//! One (transport, peer) pair as usrsctp sees it: the AF_CONN address of an
//! association. usrsctp hands packets for the peer to the output callback
//! with this link's token; the link sends them from its transport's UDP
//! socket, after loss injection, counting, and either sealing (seal.rs: the
//! whole packet encrypted and authenticated, so no checksum is needed) or
//! the optional checksum offload.
//! It can be called from any thread that drives the process-wide stack, so
//! everything here is shared-safe.
//!
//! With several local addresses a link has several paths (path.rs): the
//! output callback sends on the active one, which the transport's pump sets
//! from its probes, and a copy on a backup path while the active one is
//! suspected.

use crate::crc32c;
use crate::options::{Checksum, PathCut, Tamper};
use crate::seal::Sealer;
use crate::wire;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::IoSlice;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use wanmpi_transport::PeerId;

/// Datagram-level counters of one link.
#[derive(Debug, Default)]
pub struct LinkStats {
    pub datagrams_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub datagrams_in: AtomicU64,
    pub bytes_in: AtomicU64,
    /// DATA/I-DATA chunks handed to the network, first transmissions and
    /// retransmissions (a TSN not above the highest sent so far).
    pub data_chunks_out: AtomicU64,
    pub retransmitted_chunks: AtomicU64,
    /// Datagrams dropped by loss injection.
    pub dropped_injected: AtomicU64,
    /// Datagrams the UDP socket refused (buffer full, unreachable).
    pub send_errors: AtomicU64,
    /// Incoming datagrams with a bad CRC32c (checksum offload only).
    pub bad_checksums: AtomicU64,
}

/// Loss injection of one link (options drop_rate, drop_seed,
/// drop_first_data, drop_chunks, drop_data_nth, drop_end_nth).
#[derive(Debug, Clone)]
pub(crate) struct DropPlan {
    pub rate: f64,
    pub seed: u64,
    pub first_data: u32,
    pub chunks: Vec<u8>,
    pub data_nth: Vec<u32>,
    pub end_nth: Vec<u32>,
}

struct DropState {
    rng: ChaCha8Rng,
    highest_tsn: Option<u32>,
    /// DATA-carrying datagrams still to drop (`drop_first_data`).
    drop_first: u32,
    /// Datagrams with first-sent DATA, and those with a message's last
    /// fragment, seen since dropping started (for `drop_data_nth`, `drop_end_nth`).
    new_data_seen: u32,
    new_ends_seen: u32,
}

/// Datagram counters of one path (kept only when there are several).
#[derive(Debug, Default)]
pub struct PathStats {
    pub datagrams_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub datagrams_in: AtomicU64,
    pub bytes_in: AtomicU64,
    /// Datagrams dropped by the fault-injection cut, both directions.
    pub cut_drops: AtomicU64,
    /// Copies of the active path's packets sent here as a backup (included
    /// in datagrams_out).
    pub copies_out: AtomicU64,
}

/// One (local socket, remote endpoint) pair.
pub(crate) struct LinkPath {
    pub udp: Arc<UdpSocket>,
    /// Where the peer's datagrams come from on this path: its published
    /// address until a sealed datagram proves another (hole punching
    /// through a NAT, a NAT rebinding; pump.rs `adopt`).
    dest: Mutex<SocketAddr>,
    pub stats: PathStats,
}

impl LinkPath {
    pub fn dest(&self) -> SocketAddr {
        // A poisoned lock still holds a valid address.
        *self.dest.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_dest(&self, to: SocketAddr) {
        *self.dest.lock().unwrap_or_else(|e| e.into_inner()) = to;
    }
}

const NO_BACKUP: usize = usize::MAX;

/// When the fault-injection cut of one path is in force.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CutWindow {
    pub path: usize,
    pub from: Instant,
    pub until: Option<Instant>,
}

pub(crate) struct Link {
    pub token: usize,
    pub paths: Vec<LinkPath>,
    /// Index into `paths` of the path the association uses.
    active: AtomicUsize,
    /// A path that also gets a copy of every packet (NO_BACKUP: none).
    backup: AtomicUsize,
    cut_plan: Option<PathCut>,
    cut: OnceLock<CutWindow>,
    checksum: Checksum,
    drop_rate: f64,
    /// Chunk types whose datagrams are all dropped (`drop_chunks`).
    drop_chunks: Vec<u8>,
    drop_data_nth: Vec<u32>,
    drop_end_nth: Vec<u32>,
    /// Loss injection starts once setup is done, so setup stays fast.
    dropping: AtomicBool,
    state: Mutex<DropState>,
    /// Seals every datagram to the peer (None: a plain link).
    sealer: Option<Sealer>,
    /// Test hook (`SctpOptions::test_tamper`): how to alter which frame.
    tamper: Option<Tamper>,
    frames_seen: AtomicU32,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(
        token: usize,
        peer: PeerId,
        paths: Vec<(Arc<UdpSocket>, SocketAddr)>,
        checksum: Checksum,
        drops: DropPlan,
        cut_plan: Option<PathCut>,
        sealer: Option<Sealer>,
    ) -> Link {
        let DropPlan {
            rate: drop_rate,
            seed: drop_seed,
            first_data: drop_first_data,
            chunks: drop_chunks,
            data_nth: drop_data_nth,
            end_nth: drop_end_nth,
        } = drops;
        // One generator per link, seeded from the job seed and the peer, so a
        // run is reproducible whatever order links are used in.
        let seed = drop_seed ^ (u64::from(peer) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Link {
            token,
            paths: paths.into_iter().map(|(udp, dest)| LinkPath { udp, dest: Mutex::new(dest), stats: PathStats::default() }).collect(),
            active: AtomicUsize::new(0),
            backup: AtomicUsize::new(NO_BACKUP),
            cut_plan,
            cut: OnceLock::new(),
            checksum,
            drop_rate,
            drop_chunks,
            drop_data_nth,
            drop_end_nth,
            dropping: AtomicBool::new(false),
            state: Mutex::new(DropState {
                rng: ChaCha8Rng::seed_from_u64(seed),
                highest_tsn: None,
                drop_first: drop_first_data,
                new_data_seen: 0,
                new_ends_seen: 0,
            }),
            sealer,
            tamper: None,
            frames_seen: AtomicU32::new(0),
            stats: LinkStats::default(),
        }
    }

    pub fn start_dropping(&self) {
        let first = self.state.lock().map_or(0, |s| s.drop_first);
        let nth = !self.drop_data_nth.is_empty() || !self.drop_end_nth.is_empty();
        self.dropping.store(self.drop_rate > 0.0 || first > 0 || !self.drop_chunks.is_empty() || nth, Relaxed);
        if let Some(c) = self.cut_plan.filter(|c| c.path < self.paths.len()) {
            let now = Instant::now();
            let _ = self.cut.set(CutWindow { path: c.path, from: now + c.from, until: c.until.map(|u| now + u) });
        }
    }

    /// Test hook: alter the datagram of one frame on its way out (tamper.rs).
    pub fn set_tamper(&mut self, t: Option<Tamper>) {
        self.tamper = t;
    }

    /// Whether every datagram of this link is sealed.
    pub fn sealed(&self) -> bool {
        self.sealer.is_some()
    }

    pub fn set_active(&self, path: usize) {
        if path < self.paths.len() {
            self.active.store(path, Relaxed);
        }
    }

    pub fn set_backup(&self, path: Option<usize>) {
        self.backup.store(path.filter(|&p| p < self.paths.len()).unwrap_or(NO_BACKUP), Relaxed);
    }

    pub fn cut_window(&self) -> Option<CutWindow> {
        self.cut.get().copied()
    }

    /// The fault-injection cut drops this datagram of `path` (either way).
    fn is_cut(&self, path: usize) -> bool {
        let Some(c) = self.cut.get() else { return false };
        if c.path != path {
            return false;
        }
        let now = Instant::now();
        let cut = now >= c.from && c.until.is_none_or(|u| now < u);
        if let Some(p) = self.paths.get(path).filter(|_| cut) {
            p.stats.cut_drops.fetch_add(1, Relaxed);
        }
        cut
    }

    /// Sends a glue datagram (probe, ack) on `path`; false if it did not go.
    pub fn send_glue(&self, path: usize, bytes: &[u8]) -> bool {
        self.send_glue_to(path, bytes, None)
    }

    /// As `send_glue`, to `to` instead of the path's peer address (hole
    /// punching tries every candidate of the peer).
    pub fn send_glue_to(&self, path: usize, bytes: &[u8], to: Option<SocketAddr>) -> bool {
        let Some(p) = self.paths.get(path) else { return false };
        let to = to.unwrap_or_else(|| p.dest());
        if self.is_cut(path) {
            return false;
        }
        let sealed;
        let bytes = match &self.sealer {
            Some(s) => {
                sealed = s.seal_to_vec(bytes);
                &sealed[..]
            }
            None => bytes,
        };
        match p.udp.send_to(bytes, to) {
            Ok(_) => {
                p.stats.datagrams_out.fetch_add(1, Relaxed);
                p.stats.bytes_out.fetch_add(bytes.len() as u64, Relaxed);
                true
            }
            Err(_) => {
                self.stats.send_errors.fetch_add(1, Relaxed);
                false
            }
        }
    }

    /// Counts a datagram that arrived on `path`; false = the fault cut eats it.
    pub fn arrived_on(&self, path: usize, len: usize) -> bool {
        let Some(p) = self.paths.get(path) else { return true };
        if self.is_cut(path) {
            return false;
        }
        if self.paths.len() == 1 {
            return true;
        }
        p.stats.datagrams_in.fetch_add(1, Relaxed);
        p.stats.bytes_in.fetch_add(len as u64, Relaxed);
        true
    }

    /// One SCTP packet from usrsctp for this peer. Never panics: it runs
    /// inside a C callback.
    pub fn output(&self, packet: &mut [u8]) {
        let drop = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut highest = st.highest_tsn;
            let mut has_data = false;
            let (mut new_data, mut new_end) = (false, false);
            wire::for_each_data_chunk(packet, |tsn, flags| {
                has_data = true;
                self.stats.data_chunks_out.fetch_add(1, Relaxed);
                match highest {
                    Some(h) if !wire::tsn_after(tsn, h) => {
                        self.stats.retransmitted_chunks.fetch_add(1, Relaxed);
                    }
                    _ => {
                        highest = Some(tsn);
                        new_data = true;
                        new_end |= flags & wire::DATA_FLAG_END != 0;
                    }
                }
            });
            st.highest_tsn = highest;
            let dropping = self.dropping.load(Relaxed);
            let mut nth_hit = false;
            if dropping && new_data {
                st.new_data_seen += 1;
                nth_hit |= self.drop_data_nth.contains(&st.new_data_seen);
                if new_end {
                    st.new_ends_seen += 1;
                    nth_hit |= self.drop_end_nth.contains(&st.new_ends_seen);
                }
            }
            if nth_hit {
                true
            } else if dropping && has_data && st.drop_first > 0 {
                st.drop_first -= 1;
                true
            } else if dropping && !self.drop_chunks.is_empty() && wire::carries_chunk(packet, &self.drop_chunks) {
                true
            } else {
                dropping && self.drop_rate > 0.0 && st.rng.gen::<f64>() < self.drop_rate
            }
        };
        if drop {
            self.stats.dropped_injected.fetch_add(1, Relaxed);
            return;
        }
        let altered = match self.tamper {
            Some(t) => crate::tamper::nth_frame_data(packet, t.nth(), &self.frames_seen).map(|r| (t, r)),
            None => None,
        };
        let Some(sealer) = &self.sealer else {
            if let Some((t, at)) = &altered {
                // A copy with random data races ahead of the packet; a flip
                // alters the packet itself. Each gets a valid checksum, so
                // SCTP takes it and only a seal could catch it.
                if let Tamper::Inject(_) = t {
                    let mut forged = packet.to_vec();
                    rand::thread_rng().fill(&mut forged[at.clone()]);
                    crc32c::seal(&mut forged);
                    self.send(&[&forged]);
                }
                if let Tamper::FlipOnWire(_) = t {
                    packet[at.start] ^= 0x01;
                    if self.checksum == Checksum::Usrsctp {
                        crc32c::seal(packet);
                    }
                }
            }
            if self.checksum == Checksum::Offload {
                crc32c::seal(packet);
            }
            self.send(&[packet]);
            if let Some((Tamper::Replay(_), _)) = altered {
                self.send(&[packet]);
            }
            return;
        };
        // Sealed: the AEAD tag covers every byte, so no CRC32c is computed
        // (with offload; usrsctp's own, if chosen, is inside the seal).
        let (pn, tag) = sealer.seal(packet);
        if let Some((t, at)) = &altered {
            match t {
                // In the ciphertext, as a man in the middle would.
                Tamper::FlipOnWire(_) => packet[at.start] ^= 0x01,
                Tamper::Inject(_) => {
                    let mut forged = vec![0u8; packet.len() + tag.len()];
                    rand::thread_rng().fill(&mut forged[..]);
                    self.send(&[&pn, &forged]);
                }
                Tamper::Replay(_) => {}
            }
        }
        self.send(&[&pn, packet, &tag]);
        if let Some((Tamper::Replay(_), _)) = altered {
            self.send(&[&pn, packet, &tag]);
        }
    }

    /// Sends one datagram made of `parts` on the active path, and a copy on
    /// the backup path if there is one.
    fn send(&self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let i = self.active.load(Relaxed);
        let b = self.backup.load(Relaxed);
        if b != i {
            if let Some(backup) = self.paths.get(b) {
                if !self.is_cut(b) && send_parts(&backup.udp, parts, backup.dest()).is_ok() {
                    backup.stats.copies_out.fetch_add(1, Relaxed);
                    backup.stats.datagrams_out.fetch_add(1, Relaxed);
                    backup.stats.bytes_out.fetch_add(len as u64, Relaxed);
                }
            }
        }
        let Some(path) = self.paths.get(i) else { return };
        if self.is_cut(i) {
            return;
        }
        match send_parts(&path.udp, parts, path.dest()) {
            Ok(_) => {
                // One path: no per-path counting (the link's counters say it all).
                if self.paths.len() > 1 {
                    path.stats.datagrams_out.fetch_add(1, Relaxed);
                    path.stats.bytes_out.fetch_add(len as u64, Relaxed);
                }
                self.stats.datagrams_out.fetch_add(1, Relaxed);
                self.stats.bytes_out.fetch_add(len as u64, Relaxed);
            }
            // SCTP retransmits what the kernel refused, like a lost packet.
            Err(_) => {
                self.stats.send_errors.fetch_add(1, Relaxed);
            }
        }
    }

    /// Counts an incoming datagram (as it came, sealed or not).
    pub fn count_input(&self, len: usize) {
        self.stats.datagrams_in.fetch_add(1, Relaxed);
        self.stats.bytes_in.fetch_add(len as u64, Relaxed);
    }

    /// Checks an incoming plain SCTP packet before it goes to usrsctp (a
    /// sealed one was checked by opening it); false = drop.
    pub fn accept_input(&self, packet: &mut [u8]) -> bool {
        if self.sealer.is_none() && self.checksum == Checksum::Offload && !crc32c::verify(packet) {
            self.stats.bad_checksums.fetch_add(1, Relaxed);
            return false;
        }
        true
    }
}

/// One datagram from several pieces, without copying them together.
fn send_parts(udp: &UdpSocket, parts: &[&[u8]], dest: SocketAddr) -> std::io::Result<usize> {
    if let [one] = parts {
        return udp.send_to(one, dest);
    }
    // At most a packet number, a packet and a tag: no allocation per datagram.
    let mut slices = [IoSlice::new(&[]); 3];
    let n = parts.len().min(slices.len());
    for (s, p) in slices.iter_mut().zip(parts) {
        *s = IoSlice::new(p);
    }
    socket2::SockRef::from(udp).send_to_vectored(&slices[..n], &dest.into())
}
