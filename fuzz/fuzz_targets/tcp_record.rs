//! tcp's record layer (crates/transport-tcp, `record.rs`): any frame seals
//! into records that open back to it; any bytes as a sealed frame's wire
//! bytes, with any claimed length, never panic and never open.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_transport_tcp::record::{records, seal_record, wire_len, Gather, Progress};
use wanmpi_transport_tcp::seal::Keys;

const SECRET: [u8; 32] = [0x23; 32];

fuzz_target!(|data: &[u8]| {
    let (mut c, mut a) = (Keys::derive(&SECRET, b"transcript", true), Keys::derive(&SECRET, b"transcript", false));

    // Round trip: the input as a frame.
    let len = data.len();
    let aad = (len as u32).to_le_bytes();
    let mut wire = Vec::with_capacity(wire_len(len));
    let parts = [data];
    let mut g = Gather::new(&parts);
    for i in 0..records(len) {
        seal_record(&mut c.sealer, &aad, len, i, &mut g, &mut wire);
    }
    assert_eq!(wire.len(), wire_len(len));
    assert_eq!(Progress::new(len).advance(&mut a.opener, &aad, &mut wire, wire_len(len)), Ok(true));
    assert_eq!(&wire[..len], data);

    // Hostile: a claimed length (first 3 bytes) and whatever follows.
    if data.len() < 3 {
        return;
    }
    let claimed = usize::from(data[0]) | usize::from(data[1]) << 8 | usize::from(data[2] & 0x03) << 16;
    let mut buf = data[3..].to_vec();
    let arrived = buf.len();
    let aad = (claimed as u32).to_le_bytes();
    // Keys that never seal anything here: a frame sealed above (which the
    // fuzzer sees through comparisons) is no forgery under them.
    let mut fresh = Keys::derive(&SECRET, b"another transcript", false);
    let mut p = Progress::new(claimed);
    if let Ok(true) = p.advance(&mut fresh.opener, &aad, &mut buf, arrived) {
        panic!("bytes made without the key opened as a frame of {claimed}");
    }
});
