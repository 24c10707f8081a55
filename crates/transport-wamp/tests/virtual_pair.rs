//! The protocol between two `Conn`s on a virtual clock: delivery exactly
//! once and in channel order under loss, reordering and duplication, what a single loss costs, the
//! paper mode, forward error correction, and the rate model on a
//! bottleneck.

mod common;

use common::{config, Pair};
use std::time::Duration;
use wanmpi_transport_wamp::rate::Mode;
use wanmpi_transport_wamp::Fec;

const MS: Duration = Duration::from_millis(1);

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Offers `n` frames of up to `max_len` bytes from side 0 over `channels`,
/// runs until side 1 has `n`, and checks each channel got exactly its
/// frames, in order.
fn send_and_check_order(p: &mut Pair, n: u32, channels: u16, max_len: usize, what: &str) {
    let mut sent = vec![];
    for i in 0..n {
        let ch = (i % channels as u32) as u16;
        let f = pattern(1 + (i as usize * 7919) % max_len, i as u8);
        assert!(p.conns[0].offer(ch, &[&f]));
        sent.push((ch, f));
    }
    assert!(p.run_until(Duration::from_secs(60), |p| p.received[1].len() >= n as usize), "{what}: {} of {n}", p.received[1].len());
    for ch in 0..channels {
        let want: Vec<_> = sent.iter().filter(|f| f.0 == ch).collect();
        let got: Vec<_> = p.received[1].iter().filter(|f| f.0 == ch).collect();
        assert_eq!(got, want, "{what} channel {ch}");
    }
}

#[test]
fn frames_arrive_exactly_once_in_channel_order_under_loss() {
    for (mode, fec) in [(Mode::Model, Fec::Off), (Mode::Model, Fec::Auto), (Mode::Paper, Fec::Off), (Mode::Model, Fec::Fixed { k: 8, m: 2 })] {
        let mut p = Pair::new(config(mode, fec, 40 * MS), 20 * MS, 0.05, 7);
        send_and_check_order(&mut p, 300, 5, 20_000, &format!("{mode:?} {fec:?}"));
        assert!(p.dropped > 0);
        assert!(p.run_until(Duration::from_secs(10), |p| p.conns[0].all_acked()), "everything acknowledged");
    }
}

/// Exchanges messages both ways until the rate model knows the path.
fn warm_up(p: &mut Pair) {
    let loss = std::mem::replace(&mut p.loss, 0.0);
    let msg = pattern(300 << 10, 9);
    for i in 0..12 {
        p.one_way(i % 2, 0, &msg, Duration::from_secs(5)).unwrap();
    }
    p.loss = loss;
}

#[test]
fn reordered_and_duplicated_datagrams_deliver_each_frame_once_in_order() {
    for fec in [Fec::Off, Fec::Auto] {
        let mut p = Pair::new(config(Mode::Model, fec, 20 * MS), 10 * MS, 0.02, 9);
        p.jitter = 5 * MS;
        p.duplicate = 0.05;
        send_and_check_order(&mut p, 200, 3, 30_000, &format!("{fec:?}"));
        assert!(p.conns[1].stats.duplicates > 0, "duplicates were refused by packet number");
    }
}

#[test]
fn a_lost_middle_packet_costs_about_one_round_trip() {
    let msg = pattern(300 << 10, 1);
    let mut clean = Pair::new(config(Mode::Model, Fec::Off, 40 * MS), 20 * MS, 0.0, 1);
    warm_up(&mut clean);
    let t_clean = clean.one_way(0, 0, &msg, Duration::from_secs(5)).unwrap();
    let mut p = Pair::new(config(Mode::Model, Fec::Off, 40 * MS), 20 * MS, 0.0, 1);
    warm_up(&mut p);
    p.drop_nth = vec![(0, p.sent(0) + 20)];
    let t = p.one_way(0, 0, &msg, Duration::from_secs(5)).unwrap();
    println!("300 KiB one way at 20 ms: clean {t_clean:?}, one loss {t:?}");
    assert!(t >= t_clean + 30 * MS && t <= t_clean + 60 * MS, "clean {t_clean:?}, one loss {t:?}");
    assert_eq!(p.conns[0].stats.probes, 0, "repaired by the bitmap, not a timeout");
}

#[test]
fn a_lost_last_packet_costs_about_two_round_trips_not_a_timeout() {
    let mut p = Pair::new(config(Mode::Model, Fec::Off, 40 * MS), 20 * MS, 0.0, 1);
    // Warm up the RTT estimate.
    p.one_way(0, 0, b"warm", Duration::from_secs(1)).unwrap();
    let msg = pattern(10 * 1400, 2);
    p.drop_nth = vec![(0, 1 + 10)];
    let t = p.one_way(0, 0, &msg, Duration::from_secs(5)).unwrap();
    println!("10-packet message, last packet lost: {t:?}");
    assert!(t <= 20 * MS + 2 * 45 * MS + 10 * MS, "{t:?}");
}

#[test]
fn forward_error_correction_repairs_random_loss_without_a_round_trip() {
    let msg = pattern(300 << 10, 3);
    let mut times = vec![];
    for fec in [Fec::Off, Fec::Fixed { k: 16, m: 3 }] {
        let mut p = Pair::new(config(Mode::Model, fec, 40 * MS), 20 * MS, 0.01, 11);
        warm_up(&mut p);
        let mut total = Duration::ZERO;
        for i in 0..20 {
            let from = i % 2;
            total += p.one_way(from, 0, &msg, Duration::from_secs(5)).unwrap();
        }
        let rec = p.conns[0].stats.recovered + p.conns[1].stats.recovered;
        println!("{fec:?}: 20 x 300 KiB one way at 20 ms / 1 %: {total:?} ({rec} packets rebuilt)");
        times.push(total);
    }
    assert!(times[1] < times[0] * 3 / 4, "{times:?}");
}

#[test]
fn model_fills_a_bottleneck_without_collapse_and_ignores_random_loss() {
    for loss in [0.0, 0.02] {
        let mut p = Pair::new(config(Mode::Model, Fec::Off, 20 * MS), 10 * MS, loss, 5);
        p.rate = Some(50e6 / 8.0);
        p.queue_limit = 100_000;
        let msg = pattern(8 << 20, 4);
        let t = p.one_way(0, 0, &msg, Duration::from_secs(30)).unwrap();
        let goodput = msg.len() as f64 * 8.0 / t.as_secs_f64() / 1e6;
        println!("8 MiB over 50 Mbit/s, 20 ms RTT, loss {loss}: {goodput:.1} Mbit/s, lost {}", p.conns[0].stats.packets_lost);
        assert!(goodput > 35.0, "goodput {goodput:.1} Mbit/s at loss {loss}");
    }
}

#[test]
fn hostile_payloads_are_refused_and_change_nothing() {
    let mut p = Pair::new(config(Mode::Model, Fec::Off, 2 * MS), MS, 0.0, 1);
    p.one_way(0, 0, b"before", Duration::from_secs(1)).unwrap();
    let now = p.now;
    let b = &mut p.conns[1];
    let mut bad = 0u64.to_be_bytes().to_vec();
    wanmpi_transport_wamp::packet::emit_data_header(&mut bad, 99, 0, 4, 0, 100);
    bad.extend_from_slice(b"evil");
    assert!(b.on_datagram(now, 1000, &bad).is_err(), "channel out of range");
    assert!(b.on_datagram(now, 1001, &[1, 2, 3]).is_err(), "truncated");
    let mut ack = 0u64.to_be_bytes().to_vec();
    wanmpi_transport_wamp::packet::emit_ack(&mut ack, 0, 0, 0, 0, 8, &[0x80]);
    let mut far = 0u64.to_be_bytes().to_vec();
    wanmpi_transport_wamp::packet::emit_ack(&mut far, 1 << 40, 1 << 40, 0, 0, 0, &[]);
    assert!(b.on_datagram(now, 1002, &far).is_err(), "ACK of packets never sent");
    assert!(b.on_datagram(now, 1 << 20, &ack).is_err(), "packet number too far ahead");
    p.one_way(0, 0, b"after", Duration::from_secs(1)).unwrap();
    let got: Vec<&[u8]> = p.received[1].iter().map(|f| &f.1[..]).collect();
    assert_eq!(got, [&b"before"[..], b"after"]);
}

/// Datagrams of a real exchange, mutated at random (bytes flipped, cut,
/// spliced), fed to a third connection as if they had passed the AEAD check:
/// nothing panics, and the connection still takes a good frame afterwards.
#[test]
fn mutated_payloads_never_panic_or_corrupt() {
    use rand::{Rng, SeedableRng};
    let mut p = Pair::new(config(Mode::Model, Fec::Fixed { k: 4, m: 2 }, 2 * MS), MS, 0.1, 3);
    let mut captured = vec![];
    let now = p.now;
    for i in 0..30u32 {
        p.conns[0].offer((i % 3) as u16, &[&pattern(1 + i as usize * 300, i as u8)]);
        let mut out = vec![];
        while p.conns[0].poll_transmit(now, &mut out) {
            captured.push(std::mem::take(&mut out));
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let mut victim = wanmpi_transport_wamp::conn::Conn::new(config(Mode::Model, Fec::Auto, 2 * MS), now);
    for round in 0..20_000u64 {
        let mut d = captured[rng.gen_range(0..captured.len())].clone();
        match rng.gen_range(0..4) {
            0 => {
                let i = rng.gen_range(0..d.len());
                d[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => d.truncate(rng.gen_range(0..d.len())),
            2 => {
                let other = &captured[rng.gen_range(0..captured.len())];
                let cut = rng.gen_range(0..d.len().min(other.len()));
                d.truncate(cut);
                d.extend_from_slice(&other[cut..]);
            }
            _ => {
                for _ in 0..rng.gen_range(1..8) {
                    let i = rng.gen_range(0..d.len());
                    d[i] = rng.gen();
                }
            }
        }
        let _ = victim.on_datagram(now, round, &d);
        while victim.pop_frame().is_some() {}
    }
    // Still a working receiver: a fresh channel-0 frame from a fresh sender
    // numbered past everything above arrives intact.
    let mut out = vec![];
    let mut sender = wanmpi_transport_wamp::conn::Conn::new(config(Mode::Model, Fec::Off, 2 * MS), now);
    victim.on_timeout(now);
    assert!(sender.offer(5, &[b"intact"]));
    assert!(sender.poll_transmit(now, &mut out));
    victim.on_datagram(now, 30_000, &out).unwrap();
    assert_eq!(victim.pop_frame(), Some((5, b"intact".to_vec())));
}

/// 16 MiB each way, as the emulator's bulk ping-pong: 200 Mbit/s with a
/// drop-tail queue of 100 ms of bytes, for each (one-way delay, loss). The
/// steady state fills the link: startup's overshoot does not cut the
/// estimate, repairs protect only each message's tail and are paced.
#[test]
fn bulk_ping_pong_fills_a_200_mbit_link() {
    let rate = 200e6 / 8.0;
    for (delay_ms, loss) in [(20u32, 0.0), (20, 0.001), (20, 0.01), (80, 0.0), (80, 0.001), (80, 0.01)] {
        let delay = delay_ms * MS;
        let mut p = Pair::new(config(Mode::Model, Fec::Auto, 2 * delay), delay, loss, 21);
        p.rate = Some(rate);
        p.queue_limit = (rate * 0.1) as usize;
        let msg = pattern(16 << 20, 5);
        // Two round trips of warm-up, as the ping-pong program has, then eight timed.
        let mut times = vec![];
        for i in 0..12 {
            times.push(p.one_way(i % 2, 0, &msg, Duration::from_secs(60)).expect("delivered"));
        }
        let ideal = Duration::from_secs_f64(msg.len() as f64 / rate) + delay;
        let mean = times[4..].iter().sum::<Duration>() / 8;
        let s = &p.conns[0].stats;
        println!(
            "{delay_ms} ms, loss {loss}: mean one way {:.3} s = {:.3} of the link; first {:.3} s, last {:.3} s; lost {} repairs {} sent {}",
            mean.as_secs_f64(),
            ideal.as_secs_f64() / mean.as_secs_f64(),
            times[0].as_secs_f64(),
            times[11].as_secs_f64(),
            s.packets_lost,
            s.repairs_sent,
            s.packets_sent
        );
        println!("   {:?}", times.iter().map(|t| (t.as_secs_f64() * 1000.0) as u32).collect::<Vec<_>>());
        // Headers take 3 % of the link; random loss and its repairs a few more.
        let floor = if loss == 0.0 { 0.93 } else { 0.89 };
        assert!(ideal.as_secs_f64() / mean.as_secs_f64() >= floor, "{delay_ms} ms, loss {loss}: {times:?}");
    }
}
