//! A peer that goes away, or breaks the framing, is reported once as
//! PeerLost, and the rest of the job keeps working.

mod common;
use common::*;
use std::time::Duration;
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport_tcp::{TcpOptions, Transport, TransportError};

fn lost_events(evs: &[Event]) -> Vec<(u32, String)> {
    evs.iter().filter_map(|e| if let Event::Lost(p, r) = e { Some((*p, r.clone())) } else { None }).collect()
}

#[test]
fn a_dropped_transport_is_reported_once_and_the_others_go_on() {
    let mut ts = world(3);
    let mut c = ts.pop().unwrap();
    let mut b = ts.pop().unwrap();
    let mut a = ts.pop().unwrap();
    c.try_send(0, 0, &[b"last words"]).unwrap();
    c.flush().unwrap();
    drop(c);
    for t in [&mut a, &mut b] {
        let evs = collect_until(t, Duration::from_secs(10), |e| !lost_events(e).is_empty());
        // Give a second report the chance to show up (it must not).
        let later = collect_until(t, Duration::from_millis(200), |_| false);
        let lost = lost_events(&evs);
        assert_eq!(lost.len(), 1, "rank {}: {evs:?}", t.rank());
        assert_eq!(lost[0].0, 2);
        assert!(lost_events(&later).is_empty(), "reported twice: {later:?}");
        if t.rank() == 0 {
            assert_eq!(evs[0], Event::Frame(2, b"last words".to_vec()), "frames sent before the loss still arrive first");
        }
        assert!(matches!(t.try_send(2, 0, &[b"x"]), Err(TransportError::PeerLost { peer: 2, .. })));
    }
    a.try_send(1, 0, &[b"still here"]).unwrap();
    a.flush().unwrap();
    let evs = collect_until(&mut b, Duration::from_secs(10), |e| !e.is_empty());
    assert_eq!(evs, vec![Event::Frame(0, b"still here".to_vec())]);
}

#[test]
fn a_length_prefix_over_max_frame_drops_that_connection() {
    // Rank 0 is misconfigured with a larger max_frame than rank 1 accepts.
    let small = 64 * 1024;
    let ts = connect_all(local_kv_world(2), |_| SECRET, |r| TcpOptions { max_frame: if r == 0 { 4 * small } else { small }, ..test_opts() });
    let mut ts: Vec<_> = ts.into_iter().map(|t| t.unwrap()).collect();
    let mut b = ts.pop().unwrap();
    let mut a = ts.pop().unwrap();
    a.try_send(1, 0, &[b"fine"]).unwrap();
    a.try_send(1, 0, &[&vec![0u8; small + 1]]).unwrap();
    a.flush().unwrap();
    let evs = collect_until(&mut b, Duration::from_secs(10), |e| !lost_events(e).is_empty());
    assert_eq!(evs[0], Event::Frame(0, b"fine".to_vec()));
    let lost = lost_events(&evs);
    assert_eq!(lost.len(), 1, "{evs:?}");
    assert_eq!(lost[0].0, 0);
    assert!(lost[0].1.contains("exceeds") && lost[0].1.contains(&(small + 1).to_string()), "reason: {}", lost[0].1);
    // The sender sees the connection go, too.
    let evs = collect_until(&mut a, Duration::from_secs(10), |e| !lost_events(e).is_empty());
    assert_eq!(lost_events(&evs).len(), 1);
}

#[test]
fn a_peer_process_gone_with_unread_data_is_lost_when_its_redial_is_refused() {
    // Rank 1 goes away with a frame unread: its kernel resets the
    // connection (no FIN), which rank 0 takes for a break and redials;
    // nothing listens at rank 1's address any more (same host), so rank 1
    // is lost at once, saying so, not after the outage limit.
    let mut ts = world(2);
    let b = ts.pop().unwrap();
    let mut a = ts.pop().unwrap();
    a.try_send(1, 0, &[b"never read"]).unwrap();
    a.flush().unwrap();
    // Until rank 1's kernel has the frame (its epoll fd turns readable;
    // bounded), so that its close resets.
    let mut p = libc::pollfd { fd: b.readiness_fd().expect("epoll fd"), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1, "the frame never reached rank 1");
    let t0 = std::time::Instant::now();
    drop(b);
    let evs = collect_until(&mut a, Duration::from_secs(10), |e| !lost_events(e).is_empty());
    let lost = lost_events(&evs);
    assert_eq!(lost.len(), 1, "{evs:?}");
    assert!(lost[0].1.contains("refused the reconnection") && lost[0].1.contains("rank 1"), "reason: {}", lost[0].1);
    assert!(t0.elapsed() < Duration::from_secs(5), "lost only after {:?}", t0.elapsed());
}
