//! One (transport, peer) pair as usrsctp sees it: the AF_CONN address of an
//! association. usrsctp hands packets for the peer to the output callback
//! with this link's token; the link sends them from its transport's UDP
//! socket, after the optional checksum offload, loss injection and counting.
//! It can be called from any thread that drives the process-wide stack, so
//! everything here is shared-safe.

use crate::crc32c;
use crate::options::Checksum;
use crate::wire;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
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

/// Loss injection of one link (options drop_rate, drop_seed, drop_first_data).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DropPlan {
    pub rate: f64,
    pub seed: u64,
    pub first_data: u32,
}

struct DropState {
    rng: ChaCha8Rng,
    highest_tsn: Option<u32>,
    /// DATA-carrying datagrams still to drop (`drop_first_data`).
    drop_first: u32,
}

pub(crate) struct Link {
    pub token: usize,
    udp: Arc<UdpSocket>,
    dest: SocketAddr,
    checksum: Checksum,
    drop_rate: f64,
    /// Loss injection starts once setup is done, so setup stays fast.
    dropping: AtomicBool,
    state: Mutex<DropState>,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(
        token: usize,
        peer: PeerId,
        udp: Arc<UdpSocket>,
        dest: SocketAddr,
        checksum: Checksum,
        drops: DropPlan,
    ) -> Link {
        let DropPlan { rate: drop_rate, seed: drop_seed, first_data: drop_first_data } = drops;
        // One generator per link, seeded from the job seed and the peer, so a
        // run is reproducible whatever order links are used in.
        let seed = drop_seed ^ (u64::from(peer) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Link {
            token,
            udp,
            dest,
            checksum,
            drop_rate,
            dropping: AtomicBool::new(false),
            state: Mutex::new(DropState {
                rng: ChaCha8Rng::seed_from_u64(seed),
                highest_tsn: None,
                drop_first: drop_first_data,
            }),
            stats: LinkStats::default(),
        }
    }

    pub fn start_dropping(&self) {
        let first = self.state.lock().map_or(0, |s| s.drop_first);
        self.dropping.store(self.drop_rate > 0.0 || first > 0, Relaxed);
    }

    /// One SCTP packet from usrsctp for this peer. Never panics: it runs
    /// inside a C callback.
    pub fn output(&self, packet: &mut [u8]) {
        let drop = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut highest = st.highest_tsn;
            let mut has_data = false;
            wire::for_each_data_tsn(packet, |tsn| {
                has_data = true;
                self.stats.data_chunks_out.fetch_add(1, Relaxed);
                match highest {
                    Some(h) if !wire::tsn_after(tsn, h) => {
                        self.stats.retransmitted_chunks.fetch_add(1, Relaxed);
                    }
                    _ => highest = Some(tsn),
                }
            });
            st.highest_tsn = highest;
            let dropping = self.dropping.load(Relaxed);
            if dropping && has_data && st.drop_first > 0 {
                st.drop_first -= 1;
                true
            } else {
                dropping && self.drop_rate > 0.0 && st.rng.gen::<f64>() < self.drop_rate
            }
        };
        if drop {
            self.stats.dropped_injected.fetch_add(1, Relaxed);
            return;
        }
        if self.checksum == Checksum::Offload {
            crc32c::seal(packet);
        }
        match self.udp.send_to(packet, self.dest) {
            Ok(_) => {
                self.stats.datagrams_out.fetch_add(1, Relaxed);
                self.stats.bytes_out.fetch_add(packet.len() as u64, Relaxed);
            }
            // SCTP retransmits what the kernel refused, like a lost packet.
            Err(_) => {
                self.stats.send_errors.fetch_add(1, Relaxed);
            }
        }
    }

    /// Checks an incoming datagram before it goes to usrsctp; false = drop.
    pub fn accept_input(&self, packet: &mut [u8]) -> bool {
        self.stats.datagrams_in.fetch_add(1, Relaxed);
        self.stats.bytes_in.fetch_add(packet.len() as u64, Relaxed);
        if self.checksum == Checksum::Offload && !crc32c::verify(packet) {
            self.stats.bad_checksums.fetch_add(1, Relaxed);
            return false;
        }
        true
    }
}
