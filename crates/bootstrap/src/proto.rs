//! The line protocol between a rank and the key/value service.
//!
//! One request or reply per line, words separated by single spaces; a free
//! text (message, reason) is always the last field and runs to the end of
//! the line.
//!
//! ```text
//! server: wanmpi-kv 2 <server-nonce>
//! client: hello <rank> <client-nonce> <proof>      server: ok <proof> | err <text>
//! client: put <key> <value>                        server: ok | err <text>
//! client: fence                                    server: ok | err <text>   (when every rank is there)
//! client: get <key>                                server: val <value> | missing
//! client: abort <code> <text>                      server: ok
//! client: finalize                                 server: ok
//! client: peer-lost <rank> <text>                  server: ok
//! client: spawn <hex>                               server: ok | err <text>   (SpawnRequest)
//! client: agree <id> <members> <acked> <hex>       (no reply; later the push `agreed`, see `push.rs`)
//! client: revoke <id> <members>                    (no reply; the others get the push `revoked`)
//! client: whoami                                   server: seen <address> | seen -   (the source the service sees)
//! ```
//!
//! The service may also push lines at any time (`push.rs`): a rank's death,
//! an agreement's outcome, a revoked communicator.
//!
//! Over TCP, every line after the server's `ok <proof>` travels as a
//! sealed record instead (`sealed_lines`); over a Unix socket as above.

use crate::BootstrapError;
use std::io::BufRead;

/// Protocol version in the greeting. Version 2 seals the lines after the
/// handshake over TCP (version 1 sent them in clear).
pub const VERSION: u32 = 2;
/// Longest line either side accepts; keeps a stray peer from filling memory.
pub const MAX_LINE: usize = 16 * 1024;
/// Longest key or value.
pub const MAX_ITEM: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Hello {
        rank: u32,
        nonce: String,
        proof: String,
    },
    Put {
        key: String,
        value: String,
    },
    Fence,
    Get {
        key: String,
    },
    Abort {
        code: i32,
        message: String,
    },
    Finalize,
    PeerLost {
        rank: u32,
        reason: String,
    },
    /// Hex of a `SpawnRequest`, checked by the server before it says ok.
    Spawn {
        request: String,
    },
    /// ULFM agreement (`server/agree.rs`): ranks lists and hex as in `push`.
    Agree {
        id: String,
        members: Vec<u32>,
        acked: Vec<u32>,
        value: Vec<u8>,
    },
    /// ULFM revoke of the communicator `id` (the runtime's name for it:
    /// context pair, member set, incarnation) over `members`.
    Revoke {
        id: String,
        members: Vec<u32>,
    },
    /// Which address the service sees this connection come from: a
    /// rank's reflexive candidate (`candidates`), sealed like every line.
    Whoami,
}

impl Request {
    /// Requests the service answers with a push later, or never: no reply line.
    pub fn has_reply(&self) -> bool {
        !matches!(self, Request::Agree { .. } | Request::Revoke { .. })
    }
}

/// Keys and values are short words: no whitespace, not empty.
pub fn check_item(what: &str, s: &str) -> Result<(), BootstrapError> {
    if s.is_empty() || s.len() > MAX_ITEM || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(BootstrapError::Protocol(format!("{what} {s:?} must be 1..={MAX_ITEM} bytes without whitespace")));
    }
    Ok(())
}

/// Free text on one line: newlines and control characters become spaces.
pub fn one_line(s: &str) -> String {
    let t: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    t.chars().take(MAX_LINE / 2).collect()
}

impl Request {
    pub fn render(&self) -> String {
        match self {
            Request::Hello { rank, nonce, proof } => format!("hello {rank} {nonce} {proof}"),
            Request::Put { key, value } => format!("put {key} {value}"),
            Request::Fence => "fence".into(),
            Request::Get { key } => format!("get {key}"),
            Request::Abort { code, message } => format!("abort {code} {}", one_line(message)),
            Request::Finalize => "finalize".into(),
            Request::PeerLost { rank, reason } => format!("peer-lost {rank} {}", one_line(reason)),
            Request::Spawn { request } => format!("spawn {request}"),
            Request::Agree { id, members, acked, value } => {
                format!("agree {id} {} {} {}", crate::push::render_ranks(members), crate::push::render_ranks(acked), crate::push::hex(value))
            }
            Request::Revoke { id, members } => format!("revoke {id} {}", crate::push::render_ranks(members)),
            Request::Whoami => "whoami".into(),
        }
    }

    pub fn parse(line: &str) -> Result<Request, String> {
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        let words: Vec<&str> = rest.split(' ').filter(|w| !w.is_empty()).collect();
        let num = |w: Option<&&str>, what: &str| -> Result<i64, String> {
            w.and_then(|w| w.parse::<i64>().ok()).ok_or_else(|| format!("{verb}: bad or missing {what}"))
        };
        let rank = |w: Option<&&str>| -> Result<u32, String> { u32::try_from(num(w, "rank")?).map_err(|_| format!("{verb}: rank out of range")) };
        let exact = |n: usize| if words.len() == n { Ok(()) } else { Err(format!("{verb}: expected {n} fields")) };
        let text_after = |n: usize| rest.splitn(n + 1, ' ').nth(n).unwrap_or("").to_string();
        Ok(match verb {
            "hello" => {
                exact(3)?;
                Request::Hello { rank: rank(words.first())?, nonce: words[1].into(), proof: words[2].into() }
            }
            "put" => {
                exact(2)?;
                check_item("key", words[0]).map_err(|e| e.to_string())?;
                check_item("value", words[1]).map_err(|e| e.to_string())?;
                Request::Put { key: words[0].into(), value: words[1].into() }
            }
            "fence" => {
                exact(0)?;
                Request::Fence
            }
            "whoami" => {
                exact(0)?;
                Request::Whoami
            }
            "get" => {
                exact(1)?;
                Request::Get { key: words[0].into() }
            }
            "abort" => {
                let code = i32::try_from(num(words.first(), "code")?).map_err(|_| "abort: code out of range".to_string())?;
                Request::Abort { code, message: text_after(1) }
            }
            "finalize" => {
                exact(0)?;
                Request::Finalize
            }
            "peer-lost" => Request::PeerLost { rank: rank(words.first())?, reason: text_after(1) },
            "spawn" => {
                exact(1)?;
                Request::Spawn { request: words[0].into() }
            }
            "agree" => {
                exact(4)?;
                check_item("id", words[0]).map_err(|e| e.to_string())?;
                let ranks = |w: &str| crate::push::parse_ranks(w).ok_or_else(|| format!("agree: bad rank list {:?}", one_line(w)));
                let value = crate::push::unhex(words[3]).ok_or_else(|| "agree: bad value".to_string())?;
                Request::Agree { id: words[0].into(), members: ranks(words[1])?, acked: ranks(words[2])?, value }
            }
            "revoke" => {
                exact(2)?;
                check_item("id", words[0]).map_err(|e| e.to_string())?;
                let members = crate::push::parse_ranks(words[1]).ok_or_else(|| "revoke: bad rank list".to_string())?;
                Request::Revoke { id: words[0].into(), members }
            }
            _ => return Err(format!("unknown request {:?}", one_line(verb))),
        })
    }
}

/// Reads one line without its newline. `Ok(None)` at a clean end of stream.
/// Refuses lines longer than `MAX_LINE` and bytes that are not UTF-8.
pub fn read_line(r: &mut impl BufRead) -> Result<Option<String>, BootstrapError> {
    let mut buf = Vec::new();
    loop {
        // A signal to the process (a Python program's handlers are
        // installed without SA_RESTART) interrupts a blocking read: read on.
        let chunk = match r.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => other?,
        };
        if chunk.is_empty() {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(BootstrapError::Protocol("connection closed in the middle of a line".into()));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        buf.extend_from_slice(&chunk[..take]);
        r.consume(take);
        if buf.len() > MAX_LINE + 1 {
            return Err(BootstrapError::Protocol(format!("line longer than {MAX_LINE} bytes")));
        }
        if done {
            buf.pop();
            return String::from_utf8(buf).map(Some).map_err(|_| BootstrapError::Protocol("line is not UTF-8".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let all = [
            Request::Hello { rank: 3, nonce: "ab".into(), proof: "cd".into() },
            Request::Put { key: "ep.1".into(), value: "127.0.0.1:5000".into() },
            Request::Fence,
            Request::Get { key: "ep.1".into() },
            Request::Abort { code: -2, message: "bad input file x".into() },
            Request::Finalize,
            Request::PeerLost { rank: 7, reason: "connection reset by peer".into() },
            Request::Agree { id: "3.1".into(), members: vec![0, 1, 2, 5], acked: vec![1], value: vec![0xff, 0, 1, 2] },
            Request::Revoke { id: "3.00ab.1".into(), members: vec![0, 2] },
        ];
        for r in all {
            assert_eq!(Request::parse(&r.render()), Ok(r));
        }
    }

    #[test]
    fn refuses_malformed_requests() {
        for bad in ["", "hello", "hello x y z", "put k", "put k v extra", "fence now", "abort", "abort x msg", "peer-lost -1 r", "GET k", "rm -rf"] {
            assert!(Request::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn free_text_is_kept_on_one_line() {
        let r = Request::Abort { code: 1, message: "two\nlines".into() };
        assert_eq!(r.render(), "abort 1 two lines");
    }

    #[test]
    fn reads_lines_and_bounds_them() {
        let mut r = std::io::BufReader::new(&b"a b\nc\n"[..]);
        assert_eq!(read_line(&mut r).unwrap().as_deref(), Some("a b"));
        assert_eq!(read_line(&mut r).unwrap().as_deref(), Some("c"));
        assert_eq!(read_line(&mut r).unwrap(), None);
        let long = vec![b'x'; MAX_LINE + 10];
        assert!(read_line(&mut std::io::BufReader::new(&long[..])).is_err());
        assert!(read_line(&mut std::io::BufReader::new(&b"partial"[..])).is_err());
        assert!(read_line(&mut std::io::BufReader::new(&b"\xff\xfe\n"[..])).is_err());
    }
}
