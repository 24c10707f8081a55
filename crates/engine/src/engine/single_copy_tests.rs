//! Single copy (`single_copy.rs`) between two engines over loopback: the
//! "read" is a fake that copies from the address the sender offered (both
//! engines live in this process) or fails the way the kernel can.

use super::*;
use crate::engine::{LocalRead, ReadError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Read,
    Refuse,
    Gone,
    Short,
}

/// What a fake reader shares with its test.
#[derive(Clone)]
struct Knobs {
    mode: Arc<Mutex<Mode>>,
    calls: Arc<AtomicUsize>,
    /// Length asked for by the last read.
    last_len: Arc<AtomicUsize>,
}

struct Fake(Knobs);

impl LocalRead for Fake {
    fn reaches(&self, peer: u32) -> bool {
        peer < 2
    }
    fn read(&mut self, _peer: u32, remote: u64, local: &mut [u8]) -> Result<(), ReadError> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        self.0.last_len.store(local.len(), Ordering::SeqCst);
        match *self.0.mode.lock().unwrap() {
            Mode::Read => {
                // SAFETY: the sender's request keeps its buffer alive until
                // the read-done frame, which has not been sent yet.
                unsafe { std::ptr::copy_nonoverlapping(remote as *const u8, local.as_mut_ptr(), local.len()) };
                Ok(())
            }
            Mode::Refuse => Err(ReadError::Refused("EPERM".into())),
            Mode::Gone => Err(ReadError::Gone("ESRCH".into())),
            Mode::Short => Err(ReadError::Failed("short read".into())),
        }
    }
}

const FROM: usize = 16 * 1024;

/// A pair whose engines both read each other (threshold `FROM`).
fn pair(mode: Mode) -> (World, Knobs) {
    let cfg = EngineConfig { single_copy_from: FROM, ..EngineConfig::default() };
    let mut w = World::new(2, 1, cfg, 16 * 1024);
    let knobs = Knobs { mode: Arc::new(Mutex::new(mode)), calls: Default::default(), last_len: Default::default() };
    for e in &mut w.engines {
        e.set_local_read(Box::new(Fake(knobs.clone())));
    }
    (w, knobs)
}

#[test]
fn a_long_message_is_read_once_matched_and_the_send_waits_for_the_read() {
    for len in [FROM, 64 * 1024, 1 << 20] {
        for posted_first in [true, false] {
            let (mut w, k) = pair(Mode::Read);
            let data = pattern(len, 7);
            let mut buf = vec![0u8; len];
            let r = posted_first.then(|| w.recv(1, Some(0), Some(3), &mut buf));
            let s = w.send(0, 1, 3, data.clone(), SendMode::Standard);
            w.pump();
            assert_eq!(k.calls.load(Ordering::SeqCst), usize::from(posted_first), "read only once matched");
            let r = r.unwrap_or_else(|| {
                assert!(w.engines[0].test(s).unwrap().is_none(), "an unread send is not complete");
                w.recv(1, Some(0), Some(3), &mut buf)
            });
            w.pump();
            let st = w.done(1, r);
            assert_eq!((st.source, st.tag, st.bytes, st.error), (0, 3, len, None));
            assert!(w.engines[0].test(s).unwrap().is_some(), "read-done completes the send");
            assert_eq!(buf, data, "len {len}");
            let (a, b) = (w.engines[0].stats(), w.engines[1].stats());
            assert_eq!((a.single_copy_sends, a.rendezvous_sends, a.credited_sends, a.eager_sends), (1, 0, 0, 0));
            assert_eq!((b.single_copy_reads, b.credits_announced), (1, 0), "no credit where a read takes it all");
        }
    }
}

#[test]
fn below_the_threshold_messages_stay_eager() {
    let (mut w, k) = pair(Mode::Read);
    let data = pattern(FROM - 1, 1);
    let mut buf = vec![0u8; FROM - 1];
    let r = w.recv(1, Some(0), Some(3), &mut buf);
    w.send(0, 1, 3, data.clone(), SendMode::Standard);
    w.pump();
    assert_eq!(w.done(1, r).bytes, FROM - 1);
    assert_eq!((k.calls.load(Ordering::SeqCst), w.engines[0].stats().eager_sends), (0, 1));
    assert_eq!(buf, data);
}

#[test]
fn a_refused_read_falls_back_to_rendezvous_once_and_for_all() {
    let (mut w, k) = pair(Mode::Refuse);
    let len = 100 * 1024;
    for round in 0..3u8 {
        let data = pattern(len, round);
        let mut buf = vec![0u8; len];
        let r = w.recv(1, Some(0), Some(3), &mut buf);
        w.pump();
        let s = w.send(0, 1, 3, data.clone(), SendMode::Synchronous);
        w.pump();
        assert_eq!(w.done(1, r).error, None);
        assert!(w.engines[0].test(s).unwrap().is_some(), "round {round}: the synchronous send completes");
        assert_eq!(buf, data, "round {round}");
    }
    // One refused read, then the sender stopped offering.
    assert_eq!(k.calls.load(Ordering::SeqCst), 1);
    let a = w.engines[0].stats();
    assert_eq!(a.single_copy_sends, 1);
    assert_eq!(a.rendezvous_sends + a.credited_sends, 2);
    assert_eq!(w.engines[1].stats().single_copy_refused, 1);
}

#[test]
fn a_failed_read_is_not_trusted_and_single_copy_stops_for_that_peer() {
    let (mut w, k) = pair(Mode::Short);
    let len = 40 * 1024;
    let data = pattern(len, 9);
    let mut buf = vec![0u8; len];
    let r = w.recv(1, Some(0), Some(3), &mut buf);
    let s = w.send(0, 1, 3, data.clone(), SendMode::Standard);
    w.pump();
    assert_eq!(w.done(1, r).error, None);
    assert!(w.engines[0].test(s).unwrap().is_some());
    assert_eq!(buf, data);
    *k.mode.lock().unwrap() = Mode::Read;
    let data = pattern(len, 10);
    let r = w.recv(1, Some(0), Some(3), &mut buf);
    w.send(0, 1, 3, data.clone(), SendMode::Standard);
    w.pump();
    assert_eq!(w.done(1, r).error, None);
    assert_eq!(buf, data);
    assert_eq!((k.calls.load(Ordering::SeqCst), w.engines[1].stats().single_copy_reads), (1, 0));
    assert_eq!(w.engines[0].stats().single_copy_sends, 1);
}

#[test]
fn a_sender_gone_during_the_read_fails_the_receive_naming_it() {
    let (mut w, _k) = pair(Mode::Gone);
    let len = 64 * 1024;
    let mut buf = vec![0xEEu8; len];
    let r = w.recv(1, Some(0), Some(3), &mut buf);
    w.send(0, 1, 3, pattern(len, 1), SendMode::Standard);
    w.pump();
    let st = w.done(1, r);
    let e = st.error.expect("the receive fails");
    assert_eq!(e.class, ErrorClass::ProcFailed);
    assert!(e.to_string().contains("rank 0"), "{e}");
    assert!(buf.iter().all(|&b| b == 0xEE), "no bytes reported read");
}

#[test]
fn truncation_reads_what_fits_and_reports_the_error() {
    let (mut w, k) = pair(Mode::Read);
    let len = 80 * 1024;
    let cap = 50 * 1024;
    let data = pattern(len, 4);
    let mut buf = vec![0u8; cap];
    let r = w.recv(1, Some(0), Some(3), &mut buf);
    let s = w.send(0, 1, 3, data.clone(), SendMode::Standard);
    w.pump();
    let st = w.done(1, r);
    assert_eq!(st.bytes, cap);
    assert_eq!(st.error.expect("truncated").class, ErrorClass::Truncate);
    assert_eq!(k.last_len.load(Ordering::SeqCst), cap, "never reads past the buffer");
    assert_eq!(buf[..], data[..cap]);
    assert!(w.engines[0].test(s).unwrap().is_some());
}

#[test]
fn wildcards_probes_and_matched_probes_see_an_offered_message() {
    let (mut w, k) = pair(Mode::Read);
    let len = 30 * 1024;
    let d1 = pattern(len, 1);
    let d2 = pattern(len, 2);
    w.send(0, 1, 5, d1.clone(), SendMode::Standard);
    w.send(0, 1, 6, d2.clone(), SendMode::Synchronous);
    w.pump();
    let p = w.engines[1].iprobe(None, 0, None).expect("probe sees it");
    assert_eq!((p.source, p.tag, p.len), (0, 5, len));
    assert_eq!(k.calls.load(Ordering::SeqCst), 0, "a probe reads nothing");
    let mut b1 = vec![0u8; len];
    let r1 = w.recv(1, None, None, &mut b1);
    let m = w.engines[1].improbe(Some(0), 0, Some(6)).expect("mprobe takes it");
    assert_eq!(m.len(), len);
    let mut b2 = vec![0u8; len];
    let r2 = unsafe { w.engines[1].imrecv(m, RecvBuf { ptr: b2.as_mut_ptr(), cap: len }) };
    w.pump();
    assert_eq!((w.done(1, r1).tag, w.done(1, r2).tag), (5, 6));
    assert_eq!((b1, b2), (d1, d2));
    assert_eq!(w.engines[0].live_requests(), 2, "both sends complete, untested");
}

#[test]
fn offers_of_a_lost_peer_are_dropped_and_its_sends_fail() {
    let (mut w, _k) = pair(Mode::Read);
    let len = 30 * 1024;
    let s = w.send(0, 1, 5, pattern(len, 1), SendMode::Standard);
    w.pump();
    w.engines[1].peer_lost(0, "killed".into());
    assert!(w.engines[1].offers.is_empty());
    let mut buf = vec![0u8; len];
    let r = w.recv(1, Some(0), Some(5), &mut buf);
    assert_eq!(w.done(1, r).error.expect("fails").class, ErrorClass::ProcFailed);
    w.engines[0].peer_lost(1, "killed".into());
    assert_eq!(w.done(0, s).error.expect("fails").class, ErrorClass::ProcFailed);
}

#[test]
fn a_stray_read_done_is_a_bad_frame_and_completes_nothing() {
    let (mut w, _k) = pair(Mode::Read);
    let s = w.send(0, 1, 5, pattern(64, 1), SendMode::Synchronous);
    w.engines[0].handle_frame(1, &wanmpi_wire::Frame::ReadDone { msg_id: s.to_u64() }.to_vec());
    assert_eq!(w.engines[0].stats().bad_frames, 1);
    assert!(w.engines[0].test(s).unwrap().is_none());
}
