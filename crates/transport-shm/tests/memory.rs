//! Shared memory costs what is written, not ranks squared: sixteen ranks
//! that all poll and arm every ring into them, and one pair that exchanges
//! short messages, hold a few pages per rank; nothing is reserved up front.

mod common;

use common::{memfd_bytes, owned, world, Event};
use wanmpi_transport_shm::{SendStatus, ShmOptions, Transport};

#[test]
fn idle_rings_cost_no_pages_and_a_busy_pair_a_few() {
    let n = 16;
    let opts = ShmOptions::default();
    let mut ts = world(n, &opts);
    let ring = opts.ring_for(n as usize);
    assert_eq!(ring, 2 << 20);
    // Every rank polls and arms (the re-check after arming reads every
    // ring into it) many times over.
    for _ in 0..50 {
        for t in ts.iter_mut() {
            t.poll_recv(&mut |_| panic!("nothing was sent")).unwrap();
            assert!(t.prepare_sleep());
        }
    }
    // Ranks 0 and 1: a thousand short round trips.
    for i in 0..1000u32 {
        let msg = i.to_le_bytes();
        for (from, to) in [(0, 1), (1, 0)] {
            assert_eq!(ts[from].try_send(to as u32, 0, &[&msg]).unwrap(), SendStatus::Sent);
            let mut got = vec![];
            ts[to].poll_recv(&mut |ev| got.push(owned(ev))).unwrap();
            assert_eq!(got, vec![Event::Frame(from as u32, 0, msg.to_vec())]);
        }
    }
    let held = memfd_bytes();
    // Headers: 16 x 512 bytes = 2 pages per rank; the busy pair: a page or
    // two per direction. Polling the data of idle rings would add a page
    // per pair (960 KiB); reserving the rings, 16 x 15 x 2 MiB.
    let headers = n as u64 * 2 * 4096;
    eprintln!("{n} ranks, rings of {} KiB: {} KiB of shared memory held", ring >> 10, held >> 10);
    assert!(held >= headers && held <= headers + 4 * 4096, "{held} bytes held");
}
