//! The key/value service's lines after the handshake, sealed when they
//! cross a network. Over a Unix socket (one host: the launcher's default)
//! lines stay plain. Over TCP (ranks on remote hosts) each line travels as
//! one record, encrypted and authenticated with the job's AEAD
//! (`seal.rs`, AES-128-GCM), so the endpoints and notes a job publishes
//! cannot be read or altered on the way:
//!
//! ```text
//! len u32 LE (the line's bytes, no newline) | ciphertext (len) | tag (16)
//! ```
//!
//! The length is associated data; the nonce is a counter per direction
//! (TCP is ordered, so the reader expects exactly the next one). The keys
//! come from HKDF over the job secret salted with both nonces of the
//! handshake and the rank (`auth.rs`): new for every connection. A record
//! that fails to open (flipped, injected, replayed, dropped) ends the
//! connection with an error that says so; nothing of it is used.

use crate::proto::{self, MAX_LINE};
use crate::seal::{derive_pair, nonce, Key, TAG_LEN};
use crate::BootstrapError;
use std::io::{BufRead, ErrorKind, Read, Write};

/// The HKDF label: protocol, version, cipher.
const INFO: &[u8] = b"wanmpi-kv-v2 line keys AES-128-GCM";

/// Both directions of one sealed connection.
pub struct LineKeys {
    send: Key,
    recv: Key,
    sent: u64,
    received: u64,
}

impl LineKeys {
    /// The keys of a connection whose handshake exchanged these nonces
    /// (hex, as on the wire) for `rank`; `client` says which side we are.
    pub fn derive(secret: &[u8; 32], server_nonce: &str, client_nonce: &str, rank: u32, client: bool) -> LineKeys {
        let salt = format!("wanmpi-kv|{server_nonce}|{client_nonce}|{rank}");
        let (to_server, to_client) = derive_pair(secret, salt.as_bytes(), INFO);
        let (send, recv) = if client { (to_server, to_client) } else { (to_client, to_server) };
        LineKeys { send, recv, sent: 0, received: 0 }
    }

    /// Appends `line` (no newline) to `out` as the next record.
    fn seal_into(&mut self, line: &str, out: &mut Vec<u8>) {
        let len = (line.len() as u32).to_le_bytes();
        out.extend_from_slice(&len);
        let start = out.len();
        out.extend_from_slice(line.as_bytes());
        let tag = self.send.seal(nonce(0, self.sent), &len, &mut out[start..]);
        out.extend_from_slice(&tag);
        self.sent += 1;
    }

    /// Reads and opens the next record; `Ok(None)` at a clean end of stream.
    fn read_record(&mut self, r: &mut impl Read) -> Result<Option<String>, BootstrapError> {
        let mut len = [0u8; 4];
        match read_full(r, &mut len)? {
            0 => return Ok(None),
            4 => {}
            _ => return Err(BootstrapError::Protocol("connection closed in the middle of a record".into())),
        }
        let n = u32::from_le_bytes(len) as usize;
        let record = self.received;
        if n > MAX_LINE {
            return Err(tampered(record, &format!("a length of {n} bytes, over the {MAX_LINE}-byte limit")));
        }
        let mut buf = vec![0u8; n + TAG_LEN];
        if read_full(r, &mut buf)? < buf.len() {
            return Err(BootstrapError::Protocol("connection closed in the middle of a record".into()));
        }
        let plain = self.recv.open_within(nonce(0, record), &len, &mut buf, 0..).map_err(|_| tampered(record, "it did not open"))?;
        self.received += 1;
        buf.truncate(plain);
        String::from_utf8(buf).map(Some).map_err(|_| BootstrapError::Protocol("line is not UTF-8".into()))
    }
}

fn tampered(record: u64, what: &str) -> BootstrapError {
    BootstrapError::Protocol(format!("integrity check failed on record {record} (tampered: altered, injected or replayed on the way): {what}"))
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, BootstrapError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            // A signal (handlers installed without SA_RESTART): read on.
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// Writes `lines` (each without its newline) in one write: sealed records
/// with `keys`, plain lines without.
pub fn write_lines(w: &mut impl Write, keys: Option<&mut LineKeys>, lines: &[&str]) -> std::io::Result<()> {
    let mut out = Vec::new();
    match keys {
        Some(k) => lines.iter().for_each(|l| k.seal_into(l, &mut out)),
        None => lines.iter().for_each(|l| {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }),
    }
    w.write_all(&out)
}

/// Reads the next line: a sealed record with `keys`, a plain line without.
pub fn read_line(r: &mut impl BufRead, keys: Option<&mut LineKeys>) -> Result<Option<String>, BootstrapError> {
    match keys {
        Some(k) => k.read_record(r),
        None => proto::read_line(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn pair() -> (LineKeys, LineKeys) {
        (LineKeys::derive(&[4; 32], "aa", "bb", 2, true), LineKeys::derive(&[4; 32], "aa", "bb", 2, false))
    }

    fn written(k: &mut LineKeys, lines: &[&str]) -> Vec<u8> {
        let mut out = vec![];
        write_lines(&mut out, Some(k), lines).unwrap();
        out
    }

    #[test]
    fn lines_cross_sealed_both_ways_and_plain_without_keys() {
        let (mut c, mut s) = pair();
        let wire = written(&mut c, &["put ep.2 198.18.0.2:4000", "fence"]);
        assert!(!wire.windows(9).any(|w| w == b"198.18.0."), "plaintext visible");
        let mut r = Cursor::new(wire);
        assert_eq!(read_line(&mut r, Some(&mut s)).unwrap().as_deref(), Some("put ep.2 198.18.0.2:4000"));
        assert_eq!(read_line(&mut r, Some(&mut s)).unwrap().as_deref(), Some("fence"));
        assert_eq!(read_line(&mut r, Some(&mut s)).unwrap(), None);
        let back = written(&mut s, &["ok"]);
        assert_eq!(read_line(&mut Cursor::new(back.clone()), Some(&mut c)).unwrap().as_deref(), Some("ok"));
        // Our own record reflected back does not open.
        let (mut c2, _) = pair();
        assert!(read_line(&mut Cursor::new(written(&mut c2, &["ok"])), Some(&mut c)).is_err());
        let mut plain = vec![];
        write_lines(&mut plain, None, &["get k", "fence"]).unwrap();
        assert_eq!(plain, b"get k\nfence\n");
    }

    #[test]
    fn flipped_replayed_injected_or_oversized_records_are_refused() {
        let (mut c, _) = pair();
        let one = written(&mut c, &["put k value"]);
        let two = written(&mut c, &["get k"]);
        let open_all = |bytes: Vec<u8>| {
            let mut s = pair().1;
            let mut r = Cursor::new(bytes);
            let mut lines = vec![];
            loop {
                match read_line(&mut r, Some(&mut s)) {
                    Ok(Some(l)) => lines.push(l),
                    Ok(None) => return Ok(lines),
                    Err(e) => return Err((lines, e.to_string())),
                }
            }
        };
        assert_eq!(open_all([one.clone(), two.clone()].concat()), Ok(vec!["put k value".to_string(), "get k".to_string()]));
        for i in 0..one.len() {
            let mut t = one.clone();
            t[i] ^= 0x04;
            let (lines, e) = open_all(t).expect_err(&format!("flipped byte {i}"));
            assert!(lines.is_empty());
            assert!(e.contains("integrity check failed on record 0") || e.contains("in the middle of a record"), "{e}");
        }
        let (lines, e) = open_all([one.clone(), one.clone()].concat()).unwrap_err();
        assert_eq!(lines, vec!["put k value"]);
        assert!(e.contains("record 1") && e.contains("tampered"), "replay: {e}");
        let mut forged = 5u32.to_le_bytes().to_vec();
        forged.extend_from_slice(b"fence");
        forged.extend_from_slice(&[0u8; TAG_LEN]);
        assert!(open_all([forged, two].concat()).unwrap_err().1.contains("record 0"), "injected");
        let huge = ((MAX_LINE + 1) as u32).to_le_bytes().to_vec();
        assert!(open_all(huge).unwrap_err().1.contains("over the"));
    }
}
