//! Performance variables: what the engine and the transports counted,
//! read live from the runtime (`Runtime::tool_view`). Totals of this
//! process are one value; per-peer variables hold one value per world
//! rank (a handle's count is the job's size), so a tool sees which peer
//! and which transport carried what. Counters are COUNTER class: a handle
//! accrues only while started (`sessions.rs`); round trips and queue
//! lengths are continuous LEVEL/LOWWATERMARK variables read as they are.

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;
use std::sync::LazyLock;

use wanmpi_runtime::{PeerView, Tally, ToolView, ToolWant};

use super::consts::*;
use super::cvars::{MPI_DOUBLE, MPI_UNSIGNED_LONG_LONG};
use super::strings::{in_str, put_str};
use super::{code, entry, out, put, TResult};

/// Where a variable's values come from.
pub(super) enum Source {
    /// One total of this process.
    Total(fn(&ToolView) -> u64),
    /// One value per peer.
    Peer(fn(&PeerView) -> u64),
    /// One round trip (seconds) per peer.
    PeerSeconds(fn(&PeerView) -> f64),
    /// One value per peer, of one transport's counts.
    Transport(&'static str, fn(&Tally) -> u64),
    /// The sum over peers in other sites.
    AcrossSites(fn(&PeerView) -> u64),
}

pub(super) struct Pvar {
    pub name: String,
    pub desc: String,
    pub class: c_int,
    pub verbosity: c_int,
    pub category: String,
    pub source: Source,
}

impl Pvar {
    pub(super) fn is_counter(&self) -> bool {
        self.class == CLASS_COUNTER
    }
    /// What reading it needs of the runtime beyond the totals.
    pub(super) fn want(&self) -> ToolWant {
        match self.source {
            Source::Total(_) => ToolWant::Totals,
            Source::Peer(_) | Source::AcrossSites(_) => ToolWant::Peers,
            Source::Transport(..) => ToolWant::Transports,
            Source::PeerSeconds(_) => ToolWant::Paths,
        }
    }
    fn datatype(&self) -> c_int {
        if matches!(self.source, Source::PeerSeconds(_)) {
            MPI_DOUBLE
        } else {
            MPI_UNSIGNED_LONG_LONG
        }
    }
    /// Values per handle: 1, or the job's size for per-peer variables
    /// (None: not known before MPI_Init).
    pub(super) fn count(&self) -> Option<usize> {
        match self.source {
            Source::Total(_) | Source::AcrossSites(_) => Some(1),
            _ => crate::global::rt_any().map(|rt| rt.size() as usize),
        }
    }
}

/// A variable's values at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Values {
    Counts(Vec<u64>),
    Seconds(Vec<f64>),
}

impl Pvar {
    /// The values now, `n` of them (missing peers read as zero).
    pub(super) fn read(&self, view: &ToolView, n: usize) -> Values {
        let per_peer = |f: &dyn Fn(&PeerView) -> u64| (0..n).map(|i| view.peers.get(i).map_or(0, f)).collect();
        match self.source {
            Source::Total(f) => Values::Counts(vec![f(view)]),
            Source::AcrossSites(f) => Values::Counts(vec![view.peers.iter().filter(|p| p.other_site).map(f).sum()]),
            Source::Peer(f) => Values::Counts(per_peer(&f)),
            Source::Transport(name, f) => {
                Values::Counts(per_peer(&|p: &PeerView| p.transports.iter().find(|(t, _)| *t == name).map_or(0, |(_, t)| f(t))))
            }
            Source::PeerSeconds(f) => Values::Seconds((0..n).map(|i| view.peers.get(i).map_or(0.0, f)).collect()),
        }
    }
}

/// The counters of this process now (zero before MPI_Init), with what
/// `want` says of the peers.
pub(super) fn view(want: ToolWant) -> ToolView {
    crate::global::rt_any().map(|rt| rt.tool_view(want)).unwrap_or_default()
}

fn total(name: &str, desc: &str, category: &str, f: fn(&ToolView) -> u64) -> Pvar {
    Pvar {
        name: name.into(),
        desc: desc.into(),
        class: CLASS_COUNTER,
        verbosity: VERBOSITY_USER_BASIC,
        category: category.into(),
        source: Source::Total(f),
    }
}

fn peer(name: &str, desc: &str, f: fn(&PeerView) -> u64) -> Pvar {
    Pvar {
        name: name.into(),
        desc: desc.into(),
        class: CLASS_COUNTER,
        verbosity: VERBOSITY_USER_BASIC,
        category: "wanmpi_peers".into(),
        source: Source::Peer(f),
    }
}

/// The transports whose counts have variables of their own, and what
/// each counts beyond frames.
const TRANSPORTS: &[(&str, bool, bool)] = &[("tcp", true, false), ("sctp", true, false), ("wamp", true, true), ("shm", false, false)];

pub(super) static PVARS: LazyLock<Vec<Pvar>> = LazyLock::new(|| {
    let e = "wanmpi_engine";
    let mut v = vec![
        total("wanmpi_msgs_sent", "Messages this process sent (point-to-point and the messages of collectives).", e, |v| v.engine.msgs_sent),
        total("wanmpi_bytes_sent", "Bytes of the messages this process sent.", e, |v| v.engine.bytes_sent),
        total("wanmpi_msgs_received", "Messages this process received.", e, |v| v.engine.msgs_received),
        total("wanmpi_bytes_received", "Bytes of the messages this process received.", e, |v| v.engine.bytes_received),
        total("wanmpi_eager_sends", "Messages sent eagerly (with their envelope).", e, |v| v.engine.eager_sends),
        total("wanmpi_rendezvous_sends", "Messages sent by rendezvous (request to send, clear to send, data).", e, |v| v.engine.rendezvous_sends),
        total("wanmpi_credited_sends", "Long messages sent at once against a receive the receiver announced (no rendezvous round trip).", e, |v| v.engine.credited_sends),
        total("wanmpi_windowed_sends", "Long messages sent at once against a far receiver's WAN window.", e, |v| v.engine.windowed_sends),
        total("wanmpi_single_copy_sends", "Long messages offered to a receiver of this host to read out of this process (one copy).", e, |v| v.engine.single_copy_sends),
        total("wanmpi_unexpected_arrivals", "Messages that arrived before their receive was posted (waited in the unexpected queue).", e, |v| v.engine.unexpected),
        total("wanmpi_bad_frames", "Frames from peers that broke the protocol, dropped.", e, |v| v.engine.bad_frames),
        Pvar {
            class: CLASS_LEVEL,
            ..total("wanmpi_unexpected_queue_length", "Messages waiting in the unexpected queue now.", e, |v| v.unexpected_queue)
        },
        Pvar { class: CLASS_LEVEL, ..total("wanmpi_posted_queue_length", "Receives posted and not yet matched now.", e, |v| v.posted_queue) },
        peer("wanmpi_peer_msgs_sent", "Messages sent to each world rank.", |p| p.msgs_sent),
        peer("wanmpi_peer_bytes_sent", "Bytes of the messages sent to each world rank.", |p| p.bytes_sent),
        peer("wanmpi_peer_msgs_received", "Messages received from each world rank.", |p| p.msgs_received),
        peer("wanmpi_peer_bytes_received", "Bytes of the messages received from each world rank.", |p| p.bytes_received),
        Pvar {
            name: "wanmpi_peer_srtt".into(),
            desc: "Smoothed round trip to each world rank in seconds, as the transport carrying its long messages measures it (0: not measured, e.g. shm).".into(),
            class: CLASS_LEVEL,
            verbosity: VERBOSITY_TUNER_BASIC,
            category: "wanmpi_peers".into(),
            source: Source::PeerSeconds(|p| p.srtt),
        },
        Pvar {
            name: "wanmpi_peer_min_rtt".into(),
            desc: "Smallest round trip to each world rank seen so far, in seconds (0: not measured).".into(),
            class: CLASS_LOWWATERMARK,
            verbosity: VERBOSITY_TUNER_BASIC,
            category: "wanmpi_peers".into(),
            source: Source::PeerSeconds(|p| p.min_rtt),
        },
        Pvar { source: Source::AcrossSites(|p| p.msgs_sent), ..total("wanmpi_msgs_sent_across_sites", "Messages sent to ranks of other sites.", "wanmpi_wan", |_| 0) },
        Pvar { source: Source::AcrossSites(|p| p.bytes_sent), ..total("wanmpi_bytes_sent_across_sites", "Bytes of the messages sent to ranks of other sites.", "wanmpi_wan", |_| 0) },
        total("wanmpi_coll_msgs_across_sites", "Messages of blocking collectives this process sent to ranks of other sites.", "wanmpi_collectives", |v| v.coll_wan_msgs),
        total("wanmpi_coll_bytes_across_sites", "Bytes of those messages.", "wanmpi_collectives", |v| v.coll_wan_bytes),
    ];
    for &(t, retransmits, repairs) in TRANSPORTS {
        let cat = format!("wanmpi_transport_{t}");
        let per = |what: &str, desc: String, f: fn(&Tally) -> u64| Pvar {
            name: format!("wanmpi_{t}_{what}"),
            desc,
            class: CLASS_COUNTER,
            verbosity: VERBOSITY_TUNER_BASIC,
            category: cat.clone(),
            source: Source::Transport(t, f),
        };
        v.push(per("frames_sent", format!("Frames {t} carried to each world rank (with {t} alone: the messages)."), |t| t.frames_sent));
        v.push(per(
            "bytes_sent",
            format!("Bytes of the frames {t} carried to each world rank, the engine's headers included (with {t} alone: the messages' bytes)."),
            |t| t.bytes_sent,
        ));
        v.push(per("frames_received", format!("Frames {t} brought from each world rank (with {t} alone: the messages)."), |t| t.frames_received));
        v.push(per("bytes_received", format!("Bytes of the frames {t} brought from each world rank."), |t| t.bytes_received));
        if retransmits {
            v.push(per("retransmits", format!("What {t} sent again to each world rank after a loss (segments, chunks or packets)."), |t| {
                t.retransmits
            }));
        }
        if repairs {
            v.push(per("fec_repairs", format!("Packets from each world rank that {t} rebuilt from repair packets, without a resend."), |t| {
                t.repairs
            }));
        }
    }
    v
});

pub(super) fn index(i: c_int) -> TResult<usize> {
    usize::try_from(i).ok().filter(|&i| i < PVARS.len()).ok_or(code::INVALID_INDEX)
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_get_num(num: *mut c_int) -> c_int {
    entry(|_| {
        *out(num)? = PVARS.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut c_int,
    enumtype: *mut *mut c_void,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    entry(|_| {
        let v = &PVARS[index(pvar_index)?];
        put_str(&v.name, name, name_len);
        put(verbosity, v.verbosity);
        put(var_class, v.class);
        put(datatype, v.datatype());
        put(enumtype, std::ptr::null_mut());
        put_str(&v.desc, desc, desc_len);
        put(bind, BIND_NO_OBJECT);
        // A counter's handle can be written and reset (its own value);
        // levels are what they are.
        put(readonly, c_int::from(!v.is_counter()));
        put(continuous, c_int::from(!v.is_counter()));
        put(atomic, 1);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    entry(|_| {
        let name = in_str(name)?;
        let out = out(pvar_index)?;
        *out = PVARS.iter().position(|v| v.name == name && v.class == var_class).ok_or(code::INVALID_NAME)? as c_int;
        Ok(())
    })
}
