//! Test hook (`SctpOptions::test_tamper`): a rank alters its own frames
//! after sealing, so a test can show that the receiver catches what a man
//! in the middle would do. `FlipOnWire` acts on the SCTP packet on its way
//! to the UDP socket (here); `Replay` and `Inject` send an extra message
//! after the chosen frame (transport.rs). Never active unless a test sets
//! it.

use crate::auth::PPID_FRAME;
use crate::wire::{CHUNK_DATA, CHUNK_IDATA, COMMON_HEADER};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// DATA / I-DATA flag: the first fragment of a user message (B bit).
const FLAG_BEGIN: u8 = 0x02;

/// Flips one bit of the user data of the `nth` frame message (counted from
/// 1 by first fragments in `seen`) if `packet` carries its first fragment;
/// true if it did (the caller then fixes the packet's CRC32c). A
/// retransmitted first fragment counts again: meant for loss-free tests.
pub fn flip_nth_frame(packet: &mut [u8], nth: u32, seen: &AtomicU32) -> bool {
    let mut off = COMMON_HEADER;
    while off + 4 <= packet.len() {
        let (ty, flags) = (packet[off], packet[off + 1]);
        let len = usize::from(u16::from_be_bytes([packet[off + 2], packet[off + 3]]));
        if len < 4 || off + len > packet.len() {
            return false;
        }
        // DATA: TSN, stream, SSN, PPID, then data; I-DATA: TSN, stream,
        // reserved, MID, PPID (first fragment), then data.
        let (ppid_at, data_at) = match ty {
            CHUNK_DATA => (12, 16),
            CHUNK_IDATA => (16, 20),
            _ => (0, 0),
        };
        if data_at > 0 && flags & FLAG_BEGIN != 0 && len > data_at {
            let c = &mut packet[off..off + len];
            // usrsctp puts the PPID on the wire as the caller gave it
            // (host order), as the sockets API does.
            let ppid = u32::from_ne_bytes([c[ppid_at], c[ppid_at + 1], c[ppid_at + 2], c[ppid_at + 3]]);
            if ppid == PPID_FRAME && seen.fetch_add(1, Relaxed) + 1 == nth {
                let data = &mut c[data_at..];
                data[data.len() / 2] ^= 0x01;
                return true;
            }
        }
        off += (len + 3) & !3;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_chunk(flags: u8, ppid: u32, data: &[u8]) -> Vec<u8> {
        let mut c = vec![CHUNK_DATA, flags];
        c.extend_from_slice(&((16 + data.len()) as u16).to_be_bytes());
        c.extend_from_slice(&[0, 0, 0, 1, 0, 2, 0, 0]); // TSN 1, stream 2, SSN 0
        c.extend_from_slice(&ppid.to_ne_bytes());
        c.extend_from_slice(data);
        while c.len() % 4 != 0 {
            c.push(0);
        }
        c
    }

    #[test]
    fn flips_only_the_nth_frame_message() {
        let mut p = vec![0u8; COMMON_HEADER];
        p.extend(data_chunk(FLAG_BEGIN, 0x1234, b"not a frame"));
        p.extend(data_chunk(FLAG_BEGIN | 1, PPID_FRAME, b"frame one"));
        p.extend(data_chunk(0, PPID_FRAME, b"a middle piece"));
        p.extend(data_chunk(FLAG_BEGIN | 1, PPID_FRAME, b"frame two"));
        let seen = AtomicU32::new(0);
        let orig = p.clone();
        assert!(flip_nth_frame(&mut p, 2, &seen));
        let diff: Vec<usize> = (0..p.len()).filter(|&i| p[i] != orig[i]).collect();
        assert_eq!(diff.len(), 1);
        let two = orig.windows(9).position(|w| w == b"frame two").unwrap();
        assert_eq!(diff[0], two + 4, "the middle of the second frame's data");
        assert!(!flip_nth_frame(&mut p.clone(), 2, &seen), "counted past it");
    }
}
