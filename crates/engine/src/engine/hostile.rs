//! Hostile peers: random and mutated frames fed to an engine with receives
//! posted never panic, never complete a receive with more bytes than its
//! buffer, and never disturb a message from another peer. The same property
//! runs under libFuzzer in `fuzz/` (target `engine_frames`).

use proptest::prelude::*;

use super::*;
use crate::request::{RecvBuf, SendData};
use wanmpi_wire::{Envelope, Frame};

fn engine() -> Engine {
    let caps = wanmpi_transport::Caps { name: "test", channels: 4, max_frame: 4096, eager_limit_hint: 1024, reliable: true };
    Engine::new(0, 3, caps, EngineConfig { eager_limit: 1024, recv_credits: true, ..EngineConfig::default() })
}

/// Valid frames of every kind, as seeds for mutation.
fn seeds() -> Vec<Vec<u8>> {
    let env = Envelope { ctx: 0, tag: 1, seq: 0, msg_id: 5, total_len: 3000 };
    vec![
        Frame::Eager { env: Envelope { total_len: 4, ..env }, flags: 0, payload: b"abcd" }.to_vec(),
        Frame::Eager { env, flags: wanmpi_wire::flags::PUSH, payload: &[7; 100] }.to_vec(),
        Frame::Rts { env, flags: 0 }.to_vec(),
        Frame::Data { msg_id: 5, offset: 100, payload: &[1; 200] }.to_vec(),
        Frame::Cts { msg_id: 1, accept_len: 10 }.to_vec(),
        Frame::SyncAck { msg_id: 1 }.to_vec(),
        Frame::RecvCredit { ctx: 0, tag: 1, capacity: 1 << 40 }.to_vec(),
        Frame::Bye.to_vec(),
        Frame::Eager { env: Envelope { msg_id: 6, seq: 1, ..env }, flags: wanmpi_wire::flags::PUSH | wanmpi_wire::flags::WINDOW, payload: &[8; 100] }
            .to_vec(),
        Frame::Grant { bytes: u64::MAX }.to_vec(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn hostile_frames_never_break_the_engine(
        picks in prop::collection::vec((0usize..10, prop::collection::vec((0usize..64, any::<u8>()), 0..4), 0usize..80), 0..30),
        garbage in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut e = engine();
        e.grant_window(1, 8000);
        let mut small = vec![0u8; 10];
        let mut big = vec![0u8; 3000];
        let mut good = vec![0u8; 4];
        let r_small = unsafe { e.irecv(Some(1), 0, None, RecvBuf { ptr: small.as_mut_ptr(), cap: small.len() }) }.unwrap();
        let r_big = unsafe { e.irecv(Some(1), 0, Some(1), RecvBuf { ptr: big.as_mut_ptr(), cap: big.len() }) }.unwrap();
        let r_good = unsafe { e.irecv(Some(2), 0, Some(9), RecvBuf { ptr: good.as_mut_ptr(), cap: good.len() }) }.unwrap();
        let _ = unsafe { e.isend(1, 0, 1, SendData::Owned(vec![3; 2000]), SendMode::Synchronous) };
        let seeds = seeds();
        e.handle_frame(1, &garbage);
        for (k, flips, cut) in picks {
            let mut f = seeds[k].clone();
            for (at, x) in flips {
                if let Some(b) = f.get_mut(at) {
                    *b ^= x;
                }
            }
            f.truncate(f.len().saturating_sub(cut % 8));
            e.handle_frame(1, &f);
        }
        // The honest peer's message still arrives intact.
        let honest = Frame::Eager { env: Envelope { ctx: 0, tag: 9, seq: 0, msg_id: 1, total_len: 4 }, flags: 0, payload: b"okay" }.to_vec();
        e.handle_frame(2, &honest);
        let _ = e.transmit(&mut |_, _, _| Ok(wanmpi_transport::SendStatus::Sent));
        let st = e.test(r_good).unwrap().expect("the honest message completes");
        if let Some(w) = e.stats().windows.get(&1) {
            prop_assert!(w.peak_held <= 8000, "held {} beyond the grant", w.peak_held);
        }
        prop_assert_eq!(&good, b"okay");
        prop_assert_eq!(st.bytes, 4);
        for r in [r_small, r_big] {
            if let Ok(Some(st)) = e.test(r) {
                prop_assert!(st.bytes <= 3000);
            }
        }
    }
}
