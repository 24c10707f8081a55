//! A port's name: `wanmpi-port:1:<host>:<port>:<secret hex>`. Whoever
//! holds the whole name may connect, so the secret part never goes into a
//! message: errors, logs and abort texts show a port as `host:port`
//! (`Display`, [`PortName::redacted`]), and text that may hold a name
//! nobody parsed is cleaned with [`redact`].

use crate::auth;
use crate::proto::one_line;

pub(super) const PREFIX: &str = "wanmpi-port:1:";

/// A port's name, parsed.
#[derive(Clone, PartialEq, Eq)]
pub struct PortName {
    pub host: String,
    pub port: u16,
    pub secret: [u8; 32],
}

/// Without the secret, so that `{:?}` in a message leaks nothing either.
impl std::fmt::Debug for PortName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PortName({})", self.redacted())
    }
}

/// `host:port`: the port as messages show it.
impl std::fmt::Display for PortName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl PortName {
    /// The whole name, secret included: only for handing to whoever may
    /// connect (MPI_Open_port's result), never for a message.
    pub fn render(&self) -> String {
        format!("{PREFIX}{}:{}:{}", self.host, self.port, auth::hex(&self.secret))
    }

    /// `host:port` (an IPv6 host in brackets): what errors say.
    pub fn redacted(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The name without its secret (`wanmpi-port:1:HOST:PORT`), as mpirun
    /// hands a spawned process its parent's port; the secret follows on
    /// the process's secret pipe (`env::take_secrets`).
    pub fn public(&self) -> String {
        format!("{PREFIX}{}:{}", self.host, self.port)
    }

    pub fn parse(name: &str) -> Result<PortName, String> {
        let (host, port, secret) = split(name)?;
        let secret = secret.ok_or_else(|| bad(name))?;
        Ok(PortName { host, port, secret })
    }

    /// A name with or without its secret (`public`), and the secret if there.
    pub fn parse_public(name: &str) -> Result<(String, u16, Option<[u8; 32]>), String> {
        split(name)
    }
}

fn bad(name: &str) -> String {
    format!("{:?} is not a wanmpi port name (wanmpi-port:1:HOST:PORT:SECRET)", one_line(&redact(name)))
}

fn split(name: &str) -> Result<(String, u16, Option<[u8; 32]>), String> {
    let rest = name.trim().strip_prefix(PREFIX).ok_or_else(|| bad(name))?;
    // HOST:PORT:SECRET, or HOST:PORT: the last field is a secret when it
    // is 64 hex digits (no port number is).
    let (rest, secret) = match rest.rsplit_once(':') {
        Some((r, s)) if s.len() == 64 => (r, Some(auth::unhex(s).and_then(|b| b.try_into().ok()).ok_or_else(|| bad(name))?)),
        Some((_, s)) if s.len() > 5 => return Err(bad(name)),
        _ => (rest, None),
    };
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad(name))?;
    let port: u16 = port.parse().map_err(|_| bad(name))?;
    let host = host.trim_matches(['[', ']']);
    if host.is_empty() || port == 0 {
        return Err(bad(name));
    }
    Ok((host.to_string(), port, secret))
}

/// `text` with every run of 32 or more hex digits (a secret, or most of
/// one) replaced by `<secret>`: for text that may hold a port name that did
/// not parse, or a user's string passed where a name was expected.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 32 {
            out.push_str("<secret>");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_garbage_is_refused() {
        let n = PortName { host: "10.1.2.3".into(), port: 5000, secret: [0xab; 32] };
        assert_eq!(PortName::parse(&n.render()), Ok(n.clone()));
        let v6 = PortName { host: "::1".into(), port: 9, secret: [1; 32] };
        assert_eq!(PortName::parse(&v6.render()), Ok(v6.clone()));
        assert_eq!(v6.redacted(), "[::1]:9");
        for bad in ["", "tcp:1.2.3.4:5", "wanmpi-port:1::5:00", "wanmpi-port:1:h:99999:00", "wanmpi-port:1:h:5:xyz", "wanmpi-port:1:h:0"] {
            assert!(PortName::parse(bad).is_err(), "{bad}");
        }
        // A host of brackets alone (found by fuzzing: it parsed to an empty
        // host whose rendered name did not parse again).
        let secret = auth::hex(&[7; 32]);
        for bad in [format!("wanmpi-port:1:[:80:{secret}"), format!("wanmpi-port:1:[]:80:{secret}"), format!("wanmpi-port:1::80:{secret}")] {
            assert!(PortName::parse(&bad).is_err(), "{bad}");
        }
        for good in [format!("wanmpi-port:1:[::1]:80:{secret}"), format!("wanmpi-port:1:h]:80:{secret}")] {
            let p = PortName::parse(&good).unwrap();
            assert_eq!(PortName::parse(&p.render()), Ok(p.clone()), "{good}");
        }
        assert!(PortName::parse(&n.public()).is_err(), "a public name has no secret");
        assert_eq!(PortName::parse_public(&n.public()), Ok(("10.1.2.3".into(), 5000, None)));
        assert_eq!(PortName::parse_public(&n.render()), Ok(("10.1.2.3".into(), 5000, Some([0xab; 32]))));
    }

    #[test]
    fn no_message_shows_the_secret() {
        let n = PortName { host: "h".into(), port: 7, secret: [0xcd; 32] };
        let secret = auth::hex(&n.secret);
        for shown in [n.to_string(), format!("{n:?}"), n.redacted(), n.public()] {
            assert!(!shown.contains(&secret[..16]), "{shown}");
        }
        // A name one character off does not parse; its error hides the secret.
        let almost = n.render().replacen("wanmpi-port:1", "wanmpi-port:2", 1);
        let e = PortName::parse(&almost).unwrap_err();
        assert!(!e.contains(&secret[..16]), "{e}");
        assert_eq!(redact("x 0123456789abcdef0123456789abcdef y ab12"), "x <secret> y ab12");
    }
}
