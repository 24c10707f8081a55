//! A composite of a real tcp and a real wamp transport between two ranks
//! (threads on 127.0.0.1) whose route switches part every few frames, with
//! wamp losing datagrams so that frames overtake each other across the
//! parts: every channel still delivers its frames exactly once, in order.

use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, KeyValue as _};
use wanmpi_transport::{Incoming, PathStats, PeerId, SendStatus, Transport};
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
            Pick { small: 1, large: 0, large_from: 2000, why: "split".into() }
        } else {
            Pick::all(0, "tcp")
        }
    }
}

fn pair() -> Vec<Composite> {
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            std::thread::spawn(move || {
                let tcp =
                    TcpTransport::connect(&mut kv, SECRET, TcpOptions { bind_addr: "127.0.0.1".parse().unwrap(), ..TcpOptions::default() }).unwrap();
                let wopts = WampOptions { drop_rate: 0.05, drop_seed: kv.rank() as u64 + 1, ..WampOptions::default() };
                let wamp = WampTransport::connect(&mut kv, SECRET, wopts).unwrap();
                let mut c = Composite::new("adaptive", vec![Box::new(tcp), Box::new(wamp)], Box::new(Flip)).unwrap();
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
    let mut t = pair();
    let (a, b) = t.split_at_mut(1);
    let (a, b) = (&mut a[0], &mut b[0]);
    const N: u32 = 2000;
    const CH: u32 = 5;
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
    assert_eq!(got.len() as u32, N);
    for ch in 0..CH as u16 {
        let seqs: Vec<u32> = got.iter().filter(|f| f.0 == ch).map(|f| u32::from_le_bytes(f.1[..4].try_into().unwrap())).collect();
        let want: Vec<u32> = (0..N).filter(|s| s % CH == ch as u32).collect();
        assert_eq!(seqs, want, "channel {ch}");
    }
    for (_, f) in &got {
        assert_eq!(f, &frame(u32::from_le_bytes(f[..4].try_into().unwrap()), f.len()));
    }
    let sent = a.sent(1).unwrap();
    assert!(sent[0].0 > N as u64 / 10 && sent[1].0 > N as u64 / 10, "both parts carried frames: {sent:?}");
    let hs: Vec<_> = t.into_iter().map(|mut x| std::thread::spawn(move || x.shutdown(Duration::from_secs(5)))).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}
