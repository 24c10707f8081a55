//! Test hook (`SctpOptions::test_tamper`): a rank alters the datagram that
//! carries its own n-th frame on its way to the UDP socket, after sealing,
//! so a test can show what a man in the middle achieves. Here: finding that
//! frame in an SCTP packet; link.rs does the altering (`Link::output`: a
//! bit flipped, the datagram sent twice, a forgery sent ahead of it).
//! Never active unless a test sets it.

use crate::auth::PPID_FRAME;
use crate::wire::{CHUNK_DATA, CHUNK_IDATA, COMMON_HEADER};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// DATA / I-DATA flag: the first fragment of a user message (B bit).
const FLAG_BEGIN: u8 = 0x02;

/// If `packet` carries the first fragment of the `nth` frame message
/// (counted from 1 by first fragments in `seen`), the bytes of its user
/// data from the middle to the chunk's end: where to alter it. A
/// retransmitted first fragment counts again: meant for loss-free tests.
pub fn nth_frame_data(packet: &[u8], nth: u32, seen: &AtomicU32) -> Option<Range<usize>> {
    let mut off = COMMON_HEADER;
    while off + 4 <= packet.len() {
        let (ty, flags) = (packet[off], packet[off + 1]);
        let len = usize::from(u16::from_be_bytes([packet[off + 2], packet[off + 3]]));
        if len < 4 || off + len > packet.len() {
            return None;
        }
        // DATA: TSN, stream, SSN, PPID, then data; I-DATA: TSN, stream,
        // reserved, MID, PPID (first fragment), then data.
        let (ppid_at, data_at) = match ty {
            CHUNK_DATA => (12, 16),
            CHUNK_IDATA => (16, 20),
            _ => (0, 0),
        };
        if data_at > 0 && flags & FLAG_BEGIN != 0 && len > data_at {
            let c = &packet[off..off + len];
            // usrsctp puts the PPID on the wire as the caller gave it
            // (host order), as the sockets API does.
            let ppid = u32::from_ne_bytes([c[ppid_at], c[ppid_at + 1], c[ppid_at + 2], c[ppid_at + 3]]);
            if ppid == PPID_FRAME && seen.fetch_add(1, Relaxed) + 1 == nth {
                let data = off + data_at..off + len;
                return Some(data.start + data.len() / 2..data.end);
            }
        }
        off += (len + 3) & !3;
    }
    None
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
    fn finds_only_the_nth_frame_message() {
        let mut p = vec![0u8; COMMON_HEADER];
        p.extend(data_chunk(FLAG_BEGIN, 0x1234, b"not a frame"));
        p.extend(data_chunk(FLAG_BEGIN | 1, PPID_FRAME, b"frame one"));
        p.extend(data_chunk(0, PPID_FRAME, b"a middle piece"));
        p.extend(data_chunk(FLAG_BEGIN | 1, PPID_FRAME, b"frame two"));
        let seen = AtomicU32::new(0);
        let at = nth_frame_data(&p, 2, &seen).expect("frame two");
        let two = p.windows(9).position(|w| w == b"frame two").unwrap();
        assert_eq!(at, two + 4..two + 9, "from the middle of the second frame's data to its end");
        assert_eq!(nth_frame_data(&p, 2, &seen), None, "counted past it");
    }
}
