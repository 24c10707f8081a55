//! A composite of a real tcp and a real wamp transport between two ranks
//! (threads on 127.0.0.1) whose route switches part every few frames, with
//! wamp losing datagrams so that frames overtake each other across the
//! parts: every channel still delivers its frames exactly once, in order.
//! The same when every frame also goes as a copy over the other part (the
//! adaptive route's trial): each is delivered once, the copies dropped.
//! And when the receiver's own route never uses the part the frames come
//! by (it polls that part only once in a while): all of them still arrive.

use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, KeyValue as _};
use wanmpi_transport::{Incoming, PathStats, PeerId, SendStatus, Tally, Transport};
use wanmpi_transport_composite::{Composite, Pick, Route};
use wanmpi_transport_tcp::{TcpOptions, TcpTransport};
use wanmpi_transport_wamp::{WampOptions, WampTransport};

const SECRET: [u8; 32] = [0x21; 32];

/// Switches on every call between all frames over tcp and frames under
/// 2000 bytes over wamp with longer ones over tcp.
struct Flip;

impl Route for Flip {
    fn choose(&mut self, _peer: PeerId, current: &Pick, _paths: &[Option<PathStats>]) -> Pick {
        if current.small == 0 {
            Pick { small: 1, large: 0, large_from: 2000, copy: None, why: "split".into() }
        } else {
            Pick::all(0, "tcp")
        }
    }
}

/// Every frame over tcp with a copy over wamp, or the other way round,
/// switching on every call.
struct Copies;

impl Route for Copies {
    fn choose(&mut self, _peer: PeerId, current: &Pick, _paths: &[Option<PathStats>]) -> Pick {
        if current.small == 0 {
            Pick::with_copy(1, 0, "wamp, copies over tcp")
        } else {
            Pick::with_copy(0, 1, "tcp, copies over wamp")
        }
    }
}

/// Frames to rank 1 over wamp, to rank 0 over tcp: rank 1 sends nothing
/// over wamp, so it polls that part only now and then.
struct ByPeer;

impl Route for ByPeer {
    fn choose(&mut self, peer: PeerId, _current: &Pick, _paths: &[Option<PathStats>]) -> Pick {
        if peer == 1 {
            Pick::all(1, "wamp")
        } else {
            Pick::all(0, "tcp")
        }
    }
}

fn pair() -> Vec<Composite> {
    pair_with(|| Box::new(Flip))
}

fn pair_with(route: fn() -> Box<dyn Route>) -> Vec<Composite> {
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            std::thread::spawn(move || {
                let tcp =
                    TcpTransport::connect(&mut kv, SECRET, TcpOptions { bind_addr: "127.0.0.1".parse().unwrap(), ..TcpOptions::default() }).unwrap();
                let wopts = WampOptions { drop_rate: 0.05, drop_seed: kv.rank() as u64 + 1, ..WampOptions::default() };
                let wamp = WampTransport::connect(&mut kv, SECRET, wopts).unwrap();
                let mut c = Composite::new("adaptive", vec![Box::new(tcp), Box::new(wamp)], route()).unwrap();
                c.set_evaluate_every(Duration::ZERO);
                c
            })
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn frame(seq: u32, len: usize) -> Vec<u8> {
    let mut f = seq.to_le_bytes().to_vec();
    f.extend((4..len).map(|i| (i as u32 ^ seq) as u8));
    f
}

#[test]
fn order_holds_across_switches_under_loss() {
    let t = pair();
    let (t, got) = exchange(t);
    let sent = t[0].sent(1).unwrap();
    assert!(sent[0].0 > N as u64 / 10 && sent[1].0 > N as u64 / 10, "both parts carried frames: {sent:?}");
    check(&got);
    close(t);
}

#[test]
fn copies_over_both_parts_are_delivered_once() {
    let t = pair_with(|| Box::new(Copies));
    let (t, got) = exchange(t);
    check(&got);
    let sent = t[0].sent(1).unwrap();
    assert!(sent[0].0 + sent[1].0 > 3 * N as u64 / 2, "most frames went twice: {sent:?}");
    assert!(t[1].duplicates > N as u64 / 2, "the receiver dropped the copies: {}", t[1].duplicates);
    assert_eq!(t[1].bad_frames, 0);
    close(t);
}

const N: u32 = 2000;
const CH: u32 = 5;

#[test]
fn frames_on_a_part_the_receiver_does_not_send_over_still_arrive() {
    let (t, got) = exchange(pair_with(|| Box::new(ByPeer)));
    check(&got);
    assert_eq!(t[0].sent(1).unwrap()[1].0, u64::from(N), "rank 0 sent everything over wamp");
    close(t);
}

/// What each side's `tally` says of the other (MPI_T's per-transport
/// counters): the frames went over wamp alone, every one counted once
/// each way (the engine's bytes, without the prefix), and wamp's 5 % loss shows as chunks resent by
/// the sender or packets rebuilt by the receiver.
#[test]
fn tally_names_the_part_that_carried_each_frame() {
    let (t, got) = exchange(pair_with(|| Box::new(ByPeer)));
    check(&got);
    let tally = |c: &Composite, peer: PeerId| {
        let mut v: Vec<(&'static str, Tally)> = vec![];
        c.tally(peer, &mut |name, t| v.push((name, t)));
        v
    };
    let of = |v: &[(&'static str, Tally)], name: &str| v.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).unwrap_or_default();
    let (out, inn) = (tally(&t[0], 1), tally(&t[1], 0));
    let bytes: u64 = (0..N).map(|i| (8 + (i as usize * 131) % 5000) as u64).sum();
    let wamp = of(&out, "wamp");
    assert_eq!((wamp.frames_sent, wamp.bytes_sent), (u64::from(N), bytes), "{out:?}");
    assert_eq!(of(&out, "tcp").frames_sent, 0, "{out:?}");
    assert_eq!((of(&inn, "wamp").frames_received, of(&inn, "wamp").bytes_received), (u64::from(N), bytes), "{inn:?}");
    assert!(wamp.retransmits + of(&inn, "wamp").repairs > 0, "losses were made good somehow: {out:?} {inn:?}");
    close(t);
}

/// Sends N frames on CH channels from rank 0 to rank 1 and returns what
/// rank 1 delivered.
fn exchange(mut t: Vec<Composite>) -> (Vec<Composite>, Vec<(u16, Vec<u8>)>) {
    let (a, b) = t.split_at_mut(1);
    let (a, b) = (&mut a[0], &mut b[0]);
    let mut next = 0;
    let mut got: Vec<(u16, Vec<u8>)> = vec![];
    let start = Instant::now();
    while (got.len() as u32) < N && start.elapsed() < Duration::from_secs(60) {
        while next < N {
            let f = frame(next, 8 + (next as usize * 131) % 5000);
            match a.try_send(1, (next % CH) as u16, &[&f]).unwrap() {
                SendStatus::Sent => next += 1,
                SendStatus::WouldBlock => break,
            }
        }
        a.poll_recv(&mut |_| {}).unwrap();
        a.flush().unwrap();
        b.poll_recv(&mut |ev| {
            if let Incoming::Frame { channel, bytes, .. } = ev {
                got.push((channel, bytes.to_vec()));
            }
        })
        .unwrap();
        b.wait(Duration::from_millis(1)).unwrap();
    }
    // Copies still on their way are dropped as they come.
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_millis(300) {
        b.poll_recv(&mut |ev| {
            if let Incoming::Frame { channel, bytes, .. } = ev {
                got.push((channel, bytes.to_vec()));
            }
        })
        .unwrap();
        a.poll_recv(&mut |_| {}).unwrap();
        a.flush().unwrap();
        b.wait(Duration::from_millis(1)).unwrap();
    }
    (t, got)
}

/// Every frame once, in order per channel, intact.
fn check(got: &[(u16, Vec<u8>)]) {
    assert_eq!(got.len() as u32, N);
    for ch in 0..CH as u16 {
        let seqs: Vec<u32> = got.iter().filter(|f| f.0 == ch).map(|f| u32::from_le_bytes(f.1[..4].try_into().unwrap())).collect();
        let want: Vec<u32> = (0..N).filter(|s| s % CH == ch as u32).collect();
        assert_eq!(seqs, want, "channel {ch}");
    }
    for (_, f) in got {
        assert_eq!(f, &frame(u32::from_le_bytes(f[..4].try_into().unwrap()), f.len()));
    }
}

fn close(t: Vec<Composite>) {
    let hs: Vec<_> = t.into_iter().map(|mut x| std::thread::spawn(move || x.shutdown(Duration::from_secs(5)))).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}
