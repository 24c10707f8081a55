use super::*;

fn env() -> Envelope {
    Envelope { ctx: 7, tag: 42, seq: 3, msg_id: 0x1122334455667788, total_len: 5 }
}

#[test]
fn eager_round_trip_and_raw_layout() {
    let f = Frame::Eager { env: env(), flags: flags::SYNC, payload: b"hello" };
    let bytes = f.to_vec();
    // magic, kind, flags (LE u16), ctx, tag, seq, msg_id, total_len, payload
    assert_eq!(&bytes[..4], &[MAGIC, 1, 1, 0]);
    assert_eq!(&bytes[4..8], &7u32.to_le_bytes());
    assert_eq!(&bytes[8..12], &42i32.to_le_bytes());
    assert_eq!(&bytes[12..20], &3u64.to_le_bytes());
    assert_eq!(&bytes[20..28], &0x1122334455667788u64.to_le_bytes());
    assert_eq!(&bytes[28..36], &5u64.to_le_bytes());
    assert_eq!(&bytes[36..], b"hello");
    assert_eq!(Frame::parse(&bytes).unwrap(), f);
}

#[test]
fn every_kind_round_trips() {
    let frames = [
        Frame::Rts { env: Envelope { total_len: 1 << 40, ..env() }, flags: 0 },
        Frame::Cts { msg_id: 9, accept_len: 1000 },
        Frame::Data { msg_id: 9, offset: 65536, payload: &[1, 2, 3] },
        Frame::SyncAck { msg_id: u64::MAX },
        Frame::RecvCredit { ctx: 1, tag: ANY_TAG, capacity: 1 << 20 },
        Frame::Bye,
        Frame::Grant { bytes: 4 << 20 },
        Frame::RtsLocal { env: Envelope { total_len: 1 << 20, ..env() }, flags: flags::SYNC, addr: 0x7f00_dead_b000 },
        Frame::ReadDone { msg_id: 9 },
        Frame::Eager { env: env(), flags: flags::WINDOW | flags::PUSH | flags::SYNC, payload: b"w" },
        Frame::Eager { env: Envelope { tag: -5, ..env() }, flags: flags::PUSH, payload: &[] },
    ];
    for f in frames {
        let v = f.to_vec();
        assert_eq!(v.len(), f.kind().header_len() + f.payload().len());
        assert_eq!(Frame::parse(&v).unwrap(), f, "{f:?}");
    }
}

#[test]
fn rejects_malformed_frames() {
    assert_eq!(Frame::parse(&[]), Err(WireError::Truncated(0)));
    assert_eq!(Frame::parse(&[0, 1, 0, 0]), Err(WireError::BadMagic(0)));
    assert_eq!(Frame::parse(&[MAGIC, 99, 0, 0]), Err(WireError::UnknownKind(99)));
    assert_eq!(Frame::parse(&[MAGIC, 1, 0, 0x80]), Err(WireError::UnknownFlags(0x8000)));
    // Flags on a kind that has none (found by cargo-fuzz: they were dropped).
    let mut v = Frame::Cts { msg_id: 0, accept_len: 0 }.to_vec();
    v[2] = 1;
    assert!(matches!(Frame::parse(&v), Err(WireError::FlagsNotAllowed { kind: Kind::Cts, flags: 1 })));
    let mut v = Frame::Rts { env: env(), flags: 0 }.to_vec();
    v[2] = flags::PUSH as u8;
    assert!(matches!(Frame::parse(&v), Err(WireError::FlagsNotAllowed { kind: Kind::Rts, .. })));
    // An RTS cut short.
    let v = Frame::Rts { env: env(), flags: 0 }.to_vec();
    assert_eq!(Frame::parse(&v[..20]), Err(WireError::Truncated(20)));
    // A control frame with trailing bytes.
    let mut v = Frame::Cts { msg_id: 1, accept_len: 2 }.to_vec();
    v.push(0);
    assert!(matches!(Frame::parse(&v), Err(WireError::UnexpectedPayload { kind: Kind::Cts, len: 1 })));
    // An eager frame claiming fewer bytes than it carries.
    let v = Frame::Eager { env: Envelope { total_len: 5, ..env() }, flags: 0, payload: b"hello" }.to_vec();
    let mut longer = v.clone();
    longer.push(b'!');
    assert!(matches!(Frame::parse(&longer), Err(WireError::PayloadTooLong { payload: 6, total: 5 })));
}

#[test]
fn parse_never_panics_on_prefixes_and_flips() {
    let v = Frame::Eager { env: env(), flags: 0, payload: b"hello" }.to_vec();
    for n in 0..v.len() {
        let _ = Frame::parse(&v[..n]);
    }
    for i in 0..v.len() {
        for bit in 0..8 {
            let mut w = v.clone();
            w[i] ^= 1 << bit;
            let _ = Frame::parse(&w);
        }
    }
}

#[test]
fn rts_local_raw_layout() {
    let f = Frame::RtsLocal { env: env(), flags: 0, addr: 0x0102_0304_0506_0708 };
    let bytes = f.to_vec();
    assert_eq!(&bytes[..4], &[MAGIC, 9, 0, 0]);
    assert_eq!(&bytes[36..44], &0x0102_0304_0506_0708u64.to_le_bytes());
    assert_eq!(bytes.len(), 44);
    assert!(bytes.len() <= MAX_HEADER_LEN);
    // no payload allowed, and the address is part of the fixed header
    assert!(Frame::parse(&bytes[..40]).is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Frame::parse(&longer).is_err());
    let done = Frame::ReadDone { msg_id: 5 }.to_vec();
    assert_eq!(&done[..4], &[MAGIC, 10, 0, 0]);
    assert_eq!(&done[4..], &5u64.to_le_bytes());
}
