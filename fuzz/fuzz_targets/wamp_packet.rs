//! Any bytes as a wamp datagram: the header parser and the chunk parser
//! never panic, and a connection fed the bytes as an opened payload (as if
//! they had passed the AEAD check, the worst case: a peer that holds the
//! keys but is hostile) never panics and stays usable.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};
use wanmpi_transport_wamp::conn::{Conn, ConnConfig};
use wanmpi_transport_wamp::packet::{parse_payload, Header};
use wanmpi_transport_wamp::rate::Mode;
use wanmpi_transport_wamp::Fec;

fuzz_target!(|data: &[u8]| {
    let _ = Header::parse(data);
    if let Ok((_, chunks)) = parse_payload(data) {
        for c in chunks {
            if c.is_err() {
                break;
            }
        }
    }
    let cfg = ConnConfig {
        mode: Mode::Model,
        channels: 4,
        max_payload: 1400,
        max_frame: 1 << 16,
        window: 1 << 18,
        send_queue: 1 << 20,
        ack_every: 2,
        ack_delay: Duration::from_millis(1),
        ack_freq: 0.1,
        xmt_timeout: Duration::from_millis(50),
        initial_rtt: Duration::from_millis(10),
        initial_window: 8,
        keepalive: Duration::from_secs(5),
        peer_timeout: Duration::from_secs(60),
        fec: Fec::Auto,
    };
    let now = Instant::now();
    let mut c = Conn::new(cfg, now);
    c.offer(0, &[b"x"]);
    let mut out = vec![];
    while c.poll_transmit(now, &mut out) {
        out.clear();
    }
    for (i, piece) in data.chunks(97).enumerate() {
        let _ = c.on_datagram(now, i as u64, piece);
    }
    let _ = c.on_datagram(now, 1000, data);
    c.on_timeout(now + Duration::from_millis(500));
    while c.poll_transmit(now, &mut out) {
        out.clear();
    }
    while c.pop_frame().is_some() {}
});
