//! The two roots' connection after the handshake: blobs (address tables,
//! votes, context bitmaps, group names) sealed both ways, so that nobody on
//! the path reads or changes what the groups agree on.
//!
//! Keys: HKDF from the joint key under a label of their own (no other
//! channel's key can open these), one per direction (the accepting root
//! sends under the first). Nonce: a counter per direction, so a blob
//! replayed, dropped or reordered does not open. A blob on the wire:
//! u32 little-endian length of the plaintext (authenticated as the AAD),
//! the ciphertext, the 16-byte tag.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::seal::{self, Key, TAG_LEN};

/// Largest blob either root accepts (address tables, masks).
pub const MAX_BLOB: usize = 64 << 20;
const LABEL: &[u8] = b"wanmpi port root link 1";

/// One root's end of the sealed connection.
pub struct RootLink {
    stream: TcpStream,
    /// The other root's address, for messages.
    peer: String,
    tx: Key,
    rx: Key,
    sent: AtomicU64,
    got: AtomicU64,
}

impl std::fmt::Debug for RootLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RootLink({})", self.peer)
    }
}

impl RootLink {
    /// `accepting`: this end accepted on the port (it sends under the
    /// first key of the pair).
    pub(crate) fn new(stream: TcpStream, joint: &[u8; 32], accepting: bool) -> RootLink {
        let (a, c) = seal::derive_pair(joint, b"", LABEL);
        let (tx, rx) = if accepting { (a, c) } else { (c, a) };
        let peer = stream.peer_addr().map_or_else(|_| "an unknown address".into(), |a| a.to_string());
        RootLink { stream, peer, tx, rx, sent: AtomicU64::new(0), got: AtomicU64::new(0) }
    }

    /// The other root's address, as messages show it.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// `bytes` as they go on the wire (and counts them sent).
    fn seal(&self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let len = u32::try_from(bytes.len()).ok().filter(|l| (*l as usize) <= MAX_BLOB).ok_or_else(|| std::io::Error::other("blob too large"))?;
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::with_capacity(4 + bytes.len() + TAG_LEN);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
        let tag = self.tx.seal(seal::nonce(0, n), &len.to_le_bytes(), &mut out[4..]);
        out.extend_from_slice(&tag);
        Ok(out)
    }

    /// Sends one blob to the other root.
    pub fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        let wire = self.seal(bytes)?;
        (&self.stream).write_all(&wire)
    }

    /// Receives one blob from the other root; one that does not open (altered
    /// on the way, forged, replayed) is an error naming the other root.
    pub fn recv(&self) -> std::io::Result<Vec<u8>> {
        let mut head = [0u8; 4];
        (&self.stream).read_exact(&mut head)?;
        let len = u32::from_le_bytes(head) as usize;
        if len > MAX_BLOB {
            return Err(std::io::Error::other(format!("the other root at {} announced a blob of {len} bytes, more than {MAX_BLOB}", self.peer)));
        }
        let mut b = vec![0u8; len + TAG_LEN];
        (&self.stream).read_exact(&mut b)?;
        let n = self.got.fetch_add(1, Ordering::Relaxed);
        let opened = self.rx.open_within(seal::nonce(0, n), &head, &mut b, 0..).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a message from the other root at {} failed its authentication (altered on the way, forged or replayed)", self.peer),
            )
        })?;
        b.truncate(opened);
        Ok(b)
    }

    /// Writes raw bytes, past the seal: for tests that play a man in the
    /// middle.
    #[doc(hidden)]
    pub fn write_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        (&self.stream).write_all(bytes)
    }

    /// What `send` would write for `bytes` (counted as sent): for tests.
    #[doc(hidden)]
    pub fn sealed_for_test(&self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        self.seal(bytes)
    }
}
