//! Protocol selection: a pure function of the message length, the configured
//! eager limit and whether the receiver has announced a posted receive that
//! can take the message (a receive credit). Tested as a table below.
//!
//! - `Eager`: envelope and data go at once (in several frames when the
//!   message is larger than a frame). The receiver buffers it if no receive is
//!   posted yet; the eager limit bounds that memory.
//! - `Credited`: a long message the receiver has room for, because it posted
//!   a matching receive and told us so (`RecvCredit`). It travels like an
//!   eager message, without the request-to-send round trip. This is the WAMP
//!   paper's observation applied to MPI: the receive buffer already exists.
//! - `Rendezvous`: request-to-send, clear-to-send once matched, then data.
//!   The fallback for long messages with no credit.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Eager,
    Credited,
    Rendezvous,
}

/// Chooses the protocol for a message of `len` bytes.
pub fn select(len: usize, eager_limit: usize, credit_capacity: Option<u64>) -> Protocol {
    if len <= eager_limit {
        Protocol::Eager
    } else if credit_capacity.is_some_and(|c| c >= len as u64) {
        Protocol::Credited
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
        let rows: &[(usize, Option<u64>, Protocol)] = &[
            (0, None, Protocol::Eager),
            (limit - 1, None, Protocol::Eager),
            (limit, None, Protocol::Eager),
            (limit + 1, None, Protocol::Rendezvous),
            (limit + 1, Some(limit as u64 + 1), Protocol::Credited),
            (limit + 1, Some(limit as u64), Protocol::Rendezvous),
            (64 << 20, Some(1 << 30), Protocol::Credited),
            (10, Some(1 << 30), Protocol::Eager),
        ];
        for &(len, credit, want) in rows {
            assert_eq!(select(len, limit, credit), want, "len {len} credit {credit:?}");
        }
    }
}
