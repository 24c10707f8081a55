//! Just enough of the SCTP packet format (RFC 4960 section 3) to watch what
//! leaves through the UDP glue: the TSNs of DATA and I-DATA chunks, which
//! tell a first transmission from a retransmission per peer. Never used to
//! decide anything about delivery.

/// Common header length.
pub const COMMON_HEADER: usize = 12;
/// Chunk types carrying user data with a TSN at chunk offset 4.
pub const CHUNK_DATA: u8 = 0;
pub const CHUNK_IDATA: u8 = 64;
/// DATA / I-DATA chunk flag: the last fragment of a user message (E bit).
pub const DATA_FLAG_END: u8 = 0x01;

/// Calls `f(type, chunk)` for every chunk of `packet` (header included).
/// Stops quietly at the first malformed chunk.
fn for_each_chunk(packet: &[u8], mut f: impl FnMut(u8, &[u8])) {
    let mut off = COMMON_HEADER;
    while off + 4 <= packet.len() {
        let ty = packet[off];
        let len = u16::from_be_bytes([packet[off + 2], packet[off + 3]]) as usize;
        if len < 4 || off + len > packet.len() {
            return;
        }
        f(ty, &packet[off..off + len]);
        off += (len + 3) & !3; // chunks are padded to 4 bytes
    }
}

/// Whether `packet` carries a chunk of one of `types`.
pub fn carries_chunk(packet: &[u8], types: &[u8]) -> bool {
    let mut found = false;
    for_each_chunk(packet, |ty, _| found |= types.contains(&ty));
    found
}

/// Calls `f(tsn, flags)` for every DATA / I-DATA chunk of `packet`. Stops
/// quietly at the first malformed chunk.
pub fn for_each_data_chunk(packet: &[u8], mut f: impl FnMut(u32, u8)) {
    for_each_chunk(packet, |ty, c| {
        if (ty == CHUNK_DATA || ty == CHUNK_IDATA) && c.len() >= 8 {
            f(u32::from_be_bytes([c[4], c[5], c[6], c[7]]), c[1]);
        }
    });
}

/// TSN comparison in serial-number arithmetic (RFC 1982): is `a` after `b`?
pub fn tsn_after(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(chunks: &[(u8, &[u8])]) -> Vec<u8> {
        let mut p = vec![0u8; COMMON_HEADER];
        for (ty, body) in chunks {
            let len = 4 + body.len();
            p.extend_from_slice(&[*ty, 0]);
            p.extend_from_slice(&(len as u16).to_be_bytes());
            p.extend_from_slice(body);
            while !p.len().is_multiple_of(4) {
                p.push(0);
            }
        }
        p
    }

    #[test]
    fn finds_tsns_of_data_chunks_only() {
        // SACK (type 3), DATA with TSN 7 and a 3-byte payload (padded), I-DATA TSN 9.
        let sack = [0u8; 12];
        let data = [0, 0, 0, 7, 0, 1, 0, 0, 0, 0, 0, 0, 0xa, 0xb, 0xc];
        let idata = [0, 0, 0, 9, 0, 0, 0, 0];
        let p = packet(&[(3, &sack), (CHUNK_DATA, &data), (CHUNK_IDATA, &idata)]);
        let mut seen = vec![];
        for_each_data_chunk(&p, |t, _| seen.push(t));
        assert_eq!(seen, vec![7, 9]);
    }

    #[test]
    fn reads_the_end_flag() {
        let mut p = packet(&[(CHUNK_DATA, &[0, 0, 0, 3, 0, 0, 0, 0]), (CHUNK_DATA, &[0, 0, 0, 4, 0, 0, 0, 0])]);
        p[COMMON_HEADER + 12 + 1] = DATA_FLAG_END; // flags of the second chunk
        let mut seen = vec![];
        for_each_data_chunk(&p, |t, f| seen.push((t, f & DATA_FLAG_END != 0)));
        assert_eq!(seen, vec![(3, false), (4, true)]);
    }

    #[test]
    fn malformed_chunks_stop_the_scan() {
        let mut p = packet(&[(CHUNK_DATA, &[0, 0, 0, 1, 0, 0, 0, 0])]);
        p.extend_from_slice(&[0, 0, 0, 2]); // length 2 < 4
        let mut n = 0;
        for_each_data_chunk(&p, |_, _| n += 1);
        assert_eq!(n, 1);
        for_each_data_chunk(&p[..14], |_, _| panic!("truncated chunk must not be read"));
    }

    #[test]
    fn finds_chunk_types() {
        // SACK (3) and SHUTDOWN COMPLETE (14, no body).
        let p = packet(&[(3, &[0u8; 12]), (14, &[])]);
        assert!(carries_chunk(&p, &[14]));
        assert!(carries_chunk(&p, &[8, 3]));
        assert!(!carries_chunk(&p, &[8, CHUNK_DATA]));
        assert!(!carries_chunk(&p[..COMMON_HEADER], &[3]));
    }

    #[test]
    fn serial_comparison_wraps() {
        assert!(tsn_after(5, 4));
        assert!(!tsn_after(4, 5));
        assert!(!tsn_after(4, 4));
        assert!(tsn_after(2, u32::MAX - 1));
    }
}
