//! Lines the key/value service sends a rank without being asked: a rank
//! died (`dead`), an agreement finished (`agreed`), a communicator was
//! revoked (`revoked`). They travel on the rank's one connection, between
//! the replies to its requests (which are only ever `ok`, `err ...`,
//! `val ...` or `missing`, so the first word tells them apart).
//!
//! ```text
//! dead <rank> <text>                         the launcher saw rank's process end: text names rank, host, cause
//! agreed <id> <hex> <dead> <uniform>         agreement <id> is over: AND of the values (hex), the members
//!                                            dead when it ended (rank list, "-" for none), 1 if every
//!                                            participant had acknowledged every one of them, else 0
//! revoked <id>                               the communicator the runtime names <id> is revoked
//! ```
//!
//! Rank lists are comma-separated ranks and ranges (`0-3,7`), `-` when empty.

/// One line the service pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Push {
    Dead { rank: u32, reason: String },
    Agreed { id: String, value: Vec<u8>, dead: Vec<u32>, uniform: bool },
    Revoked { id: String },
}

impl Push {
    pub fn render(&self) -> String {
        match self {
            Push::Dead { rank, reason } => format!("dead {rank} {}", crate::proto::one_line(reason)),
            Push::Agreed { id, value, dead, uniform } => format!("agreed {id} {} {} {}", hex(value), render_ranks(dead), u8::from(*uniform)),
            Push::Revoked { id } => format!("revoked {id}"),
        }
    }

    /// `None` for a line that is not a push (a reply).
    pub fn parse(line: &str) -> Option<Push> {
        let (verb, rest) = line.split_once(' ')?;
        match verb {
            "dead" => {
                let (rank, reason) = rest.split_once(' ').unwrap_or((rest, ""));
                Some(Push::Dead { rank: rank.parse().ok()?, reason: reason.to_string() })
            }
            "agreed" => {
                let w: Vec<&str> = rest.split(' ').collect();
                let [id, value, dead, uniform] = w[..] else { return None };
                let uniform = match uniform {
                    "1" => true,
                    "0" => false,
                    _ => return None,
                };
                Some(Push::Agreed { id: id.to_string(), value: unhex(value)?, dead: parse_ranks(dead)?, uniform })
            }
            "revoked" => {
                crate::proto::check_item("id", rest).ok()?;
                Some(Push::Revoked { id: rest.to_string() })
            }
            _ => None,
        }
    }
}

pub fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s == "-" {
        return Some(Vec::new());
    }
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// Ranks as `0-3,7` (sorted, runs joined), `-` when empty.
pub fn render_ranks(ranks: &[u32]) -> String {
    let mut v = ranks.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(",")
    }
}

/// The inverse of `render_ranks`; `None` if malformed. Ranges are bounded
/// (a peer cannot make us build a list of billions).
pub fn parse_ranks(s: &str) -> Option<Vec<u32>> {
    const MOST: u64 = 1 << 20;
    if s == "-" {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || out.len() as u64 + u64::from(b - a) >= MOST {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_round_trip_and_replies_are_not_pushes() {
        let all = [
            Push::Dead { rank: 3, reason: "rank 3 on host h2 (pid 4711) was killed by signal 9 (SIGKILL)".into() },
            Push::Agreed { id: "5.2".into(), value: vec![0xff, 0x01], dead: vec![1, 2, 3, 7], uniform: false },
            Push::Agreed { id: "0.0".into(), value: vec![], dead: vec![], uniform: true },
            Push::Revoked { id: "9.ff.0".into() },
        ];
        for p in all {
            assert_eq!(Push::parse(&p.render()), Some(p));
        }
        for reply in ["ok", "err no such key", "val 1.2.3.4:5", "missing", "dead x y", "agreed 1 zz - 1", "revoked two words"] {
            assert_eq!(Push::parse(reply), None, "{reply}");
        }
    }

    #[test]
    fn rank_lists_compress_runs_and_refuse_junk() {
        assert_eq!(render_ranks(&[7, 0, 1, 2, 3, 9, 10]), "0-3,7,9-10");
        assert_eq!(parse_ranks("0-3,7,9-10"), Some(vec![0, 1, 2, 3, 7, 9, 10]));
        assert_eq!(render_ranks(&[]), "-");
        assert_eq!(parse_ranks("-"), Some(vec![]));
        for bad in ["", "a", "3-1", "1,,2", "0-4294967295"] {
            assert_eq!(parse_ranks(bad), None, "{bad}");
        }
    }
}
