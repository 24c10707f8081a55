//! The receiver's replay window over sealed packet numbers (seal.rs): a
//! packet number may be accepted once, and only if it is not older than
//! `WINDOW` numbers below the highest accepted so far. Fixed size: a peer
//! (or anyone) can make it hold nothing more, whatever it sends.
//!
//! Packet numbers only enter the window after their packet opened (the
//! caller checks, opens, then records), so a forger cannot move it.

/// Packet numbers kept behind the highest accepted one: SCTP's packets of
/// one association can be reordered by the network or by a path switch
/// (several paths, docs/sctp.md "Multihoming"), never by thousands.
pub const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Accepted before: a network duplicate, a copy on a backup path or a
    /// replay.
    Seen,
    /// Older than the window: a replay, or reordered beyond belief.
    TooOld,
}

/// Which of the last `WINDOW` packet numbers arrived.
#[derive(Debug, Clone)]
pub struct Window {
    /// One more than the highest number accepted (0: none yet).
    top: u64,
    /// Bit `n % WINDOW` says whether number n (top - WINDOW <= n < top) arrived.
    bits: [u64; WORDS],
}

impl Default for Window {
    fn default() -> Self {
        Window { top: 0, bits: [0; WORDS] }
    }
}

fn slot(n: u64) -> (usize, u64) {
    let i = n % WINDOW;
    ((i / 64) as usize, 1 << (i % 64))
}

impl Window {
    /// Whether `n` may be accepted; changes nothing.
    pub fn check(&self, n: u64) -> Result<(), Refused> {
        if n >= self.top {
            return Ok(());
        }
        if self.top - n > WINDOW {
            return Err(Refused::TooOld);
        }
        let (w, b) = slot(n);
        if self.bits[w] & b != 0 {
            return Err(Refused::Seen);
        }
        Ok(())
    }

    /// Whether `n` is above every number accepted so far.
    pub fn is_newest(&self, n: u64) -> bool {
        n >= self.top
    }

    /// Records `n` as accepted (after `check` and a successful open).
    pub fn record(&mut self, n: u64) {
        if n >= self.top {
            // Numbers skipped on the way up did not arrive (yet).
            let ahead = n - self.top + 1;
            if ahead >= WINDOW {
                self.bits = [0; WORDS];
            } else {
                for k in self.top..=n {
                    let (w, b) = slot(k);
                    self.bits[w] &= !b;
                }
            }
            self.top = n + 1;
        }
        let (w, b) = slot(n);
        self.bits[w] |= b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(w: &mut Window, n: u64) -> Result<(), Refused> {
        w.check(n)?;
        w.record(n);
        Ok(())
    }

    #[test]
    fn each_number_once_in_any_order_within_the_window() {
        let mut w = Window::default();
        for n in [0, 2, 1, 5, 3, 4] {
            assert_eq!(accept(&mut w, n), Ok(()), "{n}");
        }
        for n in 0..6 {
            assert_eq!(accept(&mut w, n), Err(Refused::Seen), "{n} again");
        }
        assert_eq!(accept(&mut w, 6), Ok(()));
    }

    #[test]
    fn a_jump_forgets_what_fell_out_and_refuses_older_numbers() {
        let mut w = Window::default();
        accept(&mut w, 1).unwrap();
        accept(&mut w, 10_000).unwrap();
        assert_eq!(w.check(1), Err(Refused::TooOld));
        assert_eq!(w.check(10_000 - WINDOW), Err(Refused::TooOld));
        // Inside the window and never seen: fine, once.
        assert_eq!(accept(&mut w, 10_000 - WINDOW + 1), Ok(()));
        assert_eq!(accept(&mut w, 10_000 - WINDOW + 1), Err(Refused::Seen));
        assert_eq!(accept(&mut w, 9_999), Ok(()));
        // A jump shorter than the window clears the slots it passes, which
        // held numbers one window older.
        accept(&mut w, 10_000 + WINDOW - 1).unwrap();
        assert_eq!(w.check(10_000 + 1), Ok(()));
        assert_eq!(w.check(9_999), Err(Refused::TooOld));
        assert_eq!(w.check(u64::MAX), Ok(()));
    }
}
