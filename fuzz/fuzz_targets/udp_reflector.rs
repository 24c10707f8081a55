//! The key/value service's UDP reflector (crates/bootstrap, `reflect.rs`):
//! any bytes as a request or an answer never panic and are never taken
//! (they carry no valid MAC); a request made from the input's bytes is
//! taken, and its answer names the address it was made for.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use wanmpi_bootstrap::reflect::{answer, check_request, read_answer, request};

const SECRET: [u8; 32] = [0x52; 32];

fuzz_target!(|data: &[u8]| {
    let mut nonce = [0u8; 16];
    for (n, b) in nonce.iter_mut().zip(data) {
        *n = *b;
    }
    assert_eq!(check_request(&SECRET, data), None, "unauthenticated bytes taken as a request");
    assert_eq!(read_answer(&SECRET, &nonce, data), None, "unauthenticated bytes taken as an answer");
    let rank = data.get(16..20).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let req = request(&SECRET, rank, &nonce);
    assert_eq!(check_request(&SECRET, &req), Some(nonce));
    let mut ip = [0u8; 16];
    for (o, b) in ip.iter_mut().zip(data.iter().skip(20)) {
        *o = *b;
    }
    let port = data.get(36..38).map_or(9, |b| u16::from_be_bytes([b[0], b[1]]));
    let from = SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port);
    let want = SocketAddr::new(from.ip().to_canonical(), port);
    assert_eq!(read_answer(&SECRET, &nonce, &answer(&SECRET, &nonce, from)), Some(want));
});
