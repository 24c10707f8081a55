//! PMI-2's wire format, as Slurm's `mpi/pmi2` plugin speaks it on the
//! task's `PMI_FD`:
//!
//! - first, in PMI-1's line format, the version handshake:
//!   `cmd=init pmi_version=2 pmi_subversion=0\n`, answered with
//!   `cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n`;
//! - then every request and reply is a 6-character decimal length, left
//!   aligned and padded with spaces, followed by that many bytes of
//!   `cmd=NAME;key=value;...;`. No escaping: a value cannot hold `;`.
//!
//! Encoding and parsing only; no I/O.

/// Bytes of the length field before each message.
pub const LENGTH_FIELD: usize = 6;
/// The longest message the 6-digit length can announce.
pub const MAX_MESSAGE: usize = 999_999;
/// Slurm's limits (`PMI2_MAX_KEYLEN`, `PMI2_MAX_VALLEN`).
pub const MAX_KEY: usize = 64;
pub const MAX_VALUE: usize = 1024;

/// The PMI-1 line that selects PMI-2 on the connection.
pub const INIT_LINE: &str = "cmd=init pmi_version=2 pmi_subversion=0\n";

/// One PMI-2 message: its command and its pairs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub cmd: String,
    pub pairs: Vec<(String, String)>,
}

impl Message {
    pub fn new(cmd: &str, pairs: &[(&str, &str)]) -> Message {
        Message { cmd: cmd.to_string(), pairs: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// `rc` as a number; a reply without one counts as success.
    pub fn rc(&self) -> i64 {
        self.get("rc").and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    }

    /// Length field and body, ready to write. Fails on a word the format
    /// cannot carry.
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let mut body = String::new();
        for (k, v) in std::iter::once(("cmd", self.cmd.as_str())).chain(self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
            if k.is_empty() || k.len() > MAX_KEY || k.contains([';', '=']) {
                return Err(format!("PMI-2 key {k:?} is empty, longer than {MAX_KEY} bytes, or holds ';' or '='"));
            }
            if v.len() > MAX_VALUE || v.contains(';') {
                return Err(format!("PMI-2 value for {k} is longer than {MAX_VALUE} bytes or holds ';'"));
            }
            body.push_str(k);
            body.push('=');
            body.push_str(v);
            body.push(';');
        }
        if body.len() > MAX_MESSAGE {
            return Err(format!("PMI-2 message of {} bytes is too long", body.len()));
        }
        Ok(format!("{:<width$}{body}", body.len(), width = LENGTH_FIELD).into_bytes())
    }
}

/// The body length announced by a length field.
pub fn parse_length(field: &[u8; LENGTH_FIELD]) -> Result<usize, String> {
    let text = std::str::from_utf8(field).map_err(|_| format!("PMI-2 length field {field:?} is not text"))?;
    text.trim().parse().map_err(|_| format!("PMI-2 length field {text:?} is not a number"))
}

/// A message body: `cmd=NAME;k=v;...` (the last `;` optional).
pub fn parse(body: &[u8]) -> Result<Message, String> {
    let text = std::str::from_utf8(body).map_err(|_| "PMI-2 message is not UTF-8".to_string())?;
    let mut fields = text.strip_suffix(';').unwrap_or(text).split(';');
    let cmd = fields.next().and_then(|f| f.strip_prefix("cmd=")).ok_or_else(|| format!("PMI-2 message {text:?} does not start with cmd="))?;
    let pairs = fields
        .map(|f| f.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("PMI-2 field {f:?} has no '='")))
        .collect::<Result<_, _>>()?;
    Ok(Message { cmd: cmd.to_string(), pairs })
}

/// The handshake's answer (a PMI-1 line): `Ok` when it accepts version 2.
pub fn check_init_reply(line: &str) -> Result<(), String> {
    let words: Vec<(&str, &str)> = line.split_whitespace().filter_map(|w| w.split_once('=')).collect();
    let get = |k: &str| words.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    if get("cmd") != Some("response_to_init") {
        return Err(format!("unexpected answer to PMI init: {:?}", line.trim_end()));
    }
    match (get("rc"), get("pmi_version")) {
        (Some("0"), Some("2")) => Ok(()),
        _ => Err(format!("the process manager refused PMI-2: {:?}", line.trim_end())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_a_padded_length_and_semicolon_terminated_pairs() {
        let m = Message::new("kvs-put", &[("key", "ep.0"), ("value", "tcp:198.18.0.1:5000")]);
        let bytes = m.encode().unwrap();
        assert_eq!(bytes, b"47    cmd=kvs-put;key=ep.0;value=tcp:198.18.0.1:5000;");
        let (len, body) = bytes.split_at(LENGTH_FIELD);
        assert_eq!(parse_length(len.try_into().unwrap()).unwrap(), body.len());
        assert_eq!(parse(body).unwrap(), m);
    }

    #[test]
    fn replies_parse_with_or_without_the_last_semicolon() {
        let m = parse(b"cmd=kvs-get-response;rc=0;found=TRUE;value=a=b,c;").unwrap();
        assert_eq!((m.cmd.as_str(), m.rc(), m.get("found"), m.get("value")), ("kvs-get-response", 0, Some("TRUE"), Some("a=b,c")));
        let m = parse(b"cmd=fullinit-response;rc=3").unwrap();
        assert_eq!(m.rc(), 3);
        for bad in [&b"key=x;"[..], b"cmd=x;novalue;", b"\xff"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse_length(b"12x   ").is_err());
    }

    #[test]
    fn words_the_format_cannot_carry_are_refused() {
        assert!(Message::new("kvs-put", &[("key", "a;b")]).encode().is_err());
        assert!(Message::new("kvs-put", &[("k=y", "v")]).encode().is_err());
        assert!(Message::new("kvs-put", &[("key", &"x".repeat(MAX_VALUE + 1))]).encode().is_err());
        assert!(Message::new("kvs-put", &[(&"k".repeat(MAX_KEY + 1), "v")]).encode().is_err());
    }

    #[test]
    fn the_version_handshake_must_accept_version_2() {
        assert!(check_init_reply("cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n").is_ok());
        assert!(check_init_reply("cmd=response_to_init rc=1 pmi_version=1 pmi_subversion=1\n").is_err());
        assert!(check_init_reply("cmd=barrier_out\n").is_err());
    }
}
