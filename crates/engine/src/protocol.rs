//! Protocol selection: a pure function of the message length, the configured
//! eager limit, whether the receiver has announced a posted receive that can
//! take the message (a receive credit) and what is left of the WAN window
//! the receiver granted. Tested as a table below.
//!
//! - `Eager`: envelope and data go at once (in several frames when the
//!   message is larger than a frame). The receiver buffers it if no receive is
//!   posted yet; the eager limit bounds that memory.
//! - `Credited`: a long message the receiver has room for, because it posted
//!   a matching receive and told us so (`RecvCredit`). It travels like an
//!   eager message, without the request-to-send round trip. This is the WAMP
//!   paper's observation applied to MPI: the receive buffer already exists.
//! - `Windowed`: a long message to a far peer that granted us a WAN window
//!   (`engine/window.rs`) with room for it: sent eagerly, buffered by the
//!   receiver if no receive is posted, its bytes given back once matched.
//! - `Rendezvous`: request-to-send, clear-to-send once matched, then data.
//!   The fallback for long messages with neither credit nor window.
//! - `SingleCopy`: a message of at least `single_copy_from` bytes to a
//!   process of this host whose memory the receiver may read (cross-memory
//!   attach): a request-to-send carrying the buffer's address; once matched
//!   the receiver reads the bytes straight into its buffer and says so
//!   (`ReadDone`). One copy instead of two through the shared-memory ring;
//!   if the read is refused the receiver answers clear-to-send and the
//!   message goes as `Rendezvous` (`engine/single_copy.rs`).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Eager,
    Credited,
    Windowed,
    Rendezvous,
    SingleCopy,
}

/// Chooses the protocol for a message of `len` bytes. `single_copy_from`:
/// the threshold of `SingleCopy`, `None` when the receiver cannot read
/// this process's memory.
pub fn select(len: usize, eager_limit: usize, single_copy_from: Option<usize>, credit_capacity: Option<u64>, window: u64) -> Protocol {
    if single_copy_from.is_some_and(|from| len >= from.max(1)) {
        Protocol::SingleCopy
    } else if len <= eager_limit {
        Protocol::Eager
    } else if credit_capacity.is_some_and(|c| c >= len as u64) {
        Protocol::Credited
    } else if window >= len as u64 {
        Protocol::Windowed
    } else {
        Protocol::Rendezvous
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_table() {
        let limit = 64 * 1024;
        let big = limit as u64 + 1;
        let rows: &[(usize, Option<u64>, u64, Protocol)] = &[
            (0, None, 0, Protocol::Eager),
            (limit - 1, None, 0, Protocol::Eager),
            (limit, None, 0, Protocol::Eager),
            (limit, None, 1 << 30, Protocol::Eager),
            (limit + 1, None, 0, Protocol::Rendezvous),
            (limit + 1, Some(big), 0, Protocol::Credited),
            (limit + 1, Some(limit as u64), 0, Protocol::Rendezvous),
            (64 << 20, Some(1 << 30), 0, Protocol::Credited),
            (10, Some(1 << 30), 0, Protocol::Eager),
            // the window: used when no credit fits, only if the whole message fits it
            (limit + 1, None, big, Protocol::Windowed),
            (limit + 1, None, big - 1, Protocol::Rendezvous),
            (limit + 1, Some(big), big, Protocol::Credited),
            (limit + 1, Some(limit as u64), big, Protocol::Windowed),
        ];
        for &(len, credit, window, want) in rows {
            assert_eq!(select(len, limit, None, credit, window), want, "len {len} credit {credit:?} window {window}");
        }
    }

    #[test]
    fn single_copy_table() {
        let limit = 64 * 1024;
        let from = 16 * 1024;
        // length, single copy from, credit, window, expected
        type Row = (usize, Option<usize>, Option<u64>, u64, Protocol);
        let rows: &[Row] = &[
            // below the threshold: as without single copy
            (1, Some(from), None, 0, Protocol::Eager),
            (from - 1, Some(from), None, 0, Protocol::Eager),
            // from the threshold on, eager-sized or not, credit or window or not
            (from, Some(from), None, 0, Protocol::SingleCopy),
            (limit, Some(from), None, 0, Protocol::SingleCopy),
            (limit + 1, Some(from), Some(1 << 30), 1 << 30, Protocol::SingleCopy),
            (64 << 20, Some(from), None, 0, Protocol::SingleCopy),
            // a threshold above the eager limit
            (limit, Some(limit * 2), None, 0, Protocol::Eager),
            (limit + 1, Some(limit * 2), None, 0, Protocol::Rendezvous),
            (limit * 2, Some(limit * 2), None, 0, Protocol::SingleCopy),
            // a threshold of 0 never sends an empty message by a read
            (0, Some(0), None, 0, Protocol::Eager),
            (1, Some(0), None, 0, Protocol::SingleCopy),
            // the receiver cannot read us: the ordinary choice
            (limit + 1, None, None, 0, Protocol::Rendezvous),
            (from, None, None, 0, Protocol::Eager),
        ];
        for &(len, sc, credit, window, want) in rows {
            assert_eq!(select(len, limit, sc, credit, window), want, "len {len} single copy from {sc:?}");
        }
    }
}
