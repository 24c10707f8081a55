//! Which connection a pair of ranks keeps when both dial, decided by a rule
//! both apply alone, with no round trip of its own.
//!
//! Each rank of a pair dials the other's candidates (the higher rank after
//! `TcpOptions::reverse_delay`) while accepting. A connection counts once
//! its handshake is done: for the dialler when the verdict arrives, for the
//! acceptor when it sends the verdict. The acceptor decides whether a
//! connection it accepts is made, so the lower rank decides every
//! connection the higher rank dials, and the higher rank every one the
//! lower rank dials. Two rules keep their decisions apart:
//!
//! - The lower rank refuses a higher rank's connection (closes it before
//!   its verdict) while one of its own dials to that rank has sent its
//!   proof: the higher rank may already have said yes to that one. When
//!   both were under way, the lower rank's dial wins.
//! - Either rank, once a connection to a peer counts, drops its own other
//!   attempts to that peer and, during setup, refuses further callers
//!   claiming it.
//!
//! So the lower rank never holds two, and the higher rank holds two only
//! if the lower rank gave up its dial between sending its proof and
//! receiving the verdict (a handshake timeout): the lower rank closed that
//! one, which the higher rank then sees break and replaces as any break.

use std::time::Duration;

/// May a caller proving `from` be let in by `me`? `have`: a connection
/// with `from` already counts (setup only; after setup a new connection
/// replaces the old); `proving`: one of `me`'s dials to `from` has sent its
/// proof.
pub(crate) fn admit(me: u32, from: u32, have: bool, proving: bool) -> Result<(), String> {
    if from == me {
        return Err(format!("claims rank {from}, this rank"));
    }
    if have {
        return Err(format!("duplicate connection for rank {from}"));
    }
    if from > me && proving {
        return Err(format!("rank {from} dialled while this rank's own dial to it awaits its verdict (the lower rank's dial is kept)"));
    }
    Ok(())
}

/// How long `me` waits before dialling `peer`: the lower rank at once,
/// the higher `reverse`.
pub(crate) fn dial_delay(me: u32, peer: u32, reverse: Duration) -> Duration {
    if me < peer {
        Duration::ZERO
    } else {
        reverse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lower_ranks_dial_wins_and_nothing_counts_twice() {
        // Rank 1 (higher) is called by rank 0: only a connection already
        // made keeps it out; rank 1's own dials do not matter.
        assert!(admit(1, 0, false, true).is_ok());
        assert!(admit(1, 0, true, false).unwrap_err().contains("duplicate"));
        // Rank 0 (lower) is called by rank 1: refused while its own dial
        // has sent its proof.
        assert!(admit(0, 1, false, false).is_ok());
        assert!(admit(0, 1, false, true).unwrap_err().contains("lower rank's dial is kept"));
        assert!(admit(3, 3, false, false).is_err());
        assert_eq!(dial_delay(0, 1, Duration::from_secs(1)), Duration::ZERO);
        assert_eq!(dial_delay(1, 0, Duration::from_secs(1)), Duration::from_secs(1));
    }
}
