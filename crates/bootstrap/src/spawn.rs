//! A rank's request that the launcher start more processes
//! (MPI_Comm_spawn, MPI_Comm_spawn_multiple), as it travels to the
//! launcher: one `spawn <hex>` line of the key/value protocol, whose
//! fields may hold any bytes but NUL (programs, arguments, directories).

use crate::auth::hex;

/// Set by mpirun in a spawned rank: the port its parents wait on, without
/// its secret (`PortName::public`), which follows the job secret on the
/// rank's secret pipe (`env::take_secrets`), never in an environment or on
/// a command line.
pub const ENV_PARENT_PORT: &str = "WANMPI_PARENT_PORT";
/// Which command of a spawn a rank runs (MPI_APPNUM).
pub const ENV_APPNUM: &str = "WANMPI_APPNUM";
/// The `wdir` info key, applied by the rank at init.
pub const ENV_WDIR: &str = "WANMPI_WDIR";

/// One command of a spawn: `count` copies of `program args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnApp {
    pub program: String,
    pub args: Vec<String>,
    pub count: u32,
    /// The `wdir` info key: the children's working directory.
    pub wdir: Option<String>,
    /// The `host` info key: where the children run (a host of the job's
    /// host list, or this machine when not given).
    pub host: Option<String>,
}

/// Everything the launcher needs: the commands in order (the children's
/// MPI_COMM_WORLD ranks follow it) and the port they connect back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    pub port: String,
    pub apps: Vec<SpawnApp>,
}

/// Most processes one request may ask for.
pub const MAX_SPAWN: u32 = 4096;

/// The key under which the launcher notes why the spawn waiting on `port`
/// failed (the value: the reason, hex), for a parent that mpirun cannot
/// reach directly (another network namespace, a firewall). A digest of the
/// name keyed by its secret: the key may be listed or logged, the port's
/// secret must not.
pub fn failure_key(port: &str) -> String {
    let digest = match crate::port::PortName::parse(port) {
        Ok(p) => crate::auth::derive(&p.secret, "spawn-failed"),
        Err(_) => crate::auth::derive(&[0; 32], port),
    };
    format!("spawn-failed/{}", hex(&digest[..16]))
}

pub fn failure_note(text: &str) -> String {
    hex(text.as_bytes())
}

/// The reason in a failure note.
pub fn read_failure_note(note: &str) -> String {
    crate::auth::unhex(note).map_or_else(|| note.to_string(), |b| String::from_utf8_lossy(&b).into_owned())
}

impl SpawnRequest {
    pub fn total(&self) -> u32 {
        self.apps.iter().map(|a| a.count).sum()
    }

    /// The request as hex digits of NUL-separated fields.
    pub fn encode(&self) -> Result<String, String> {
        let mut f: Vec<String> = vec![self.port.clone(), self.apps.len().to_string()];
        for a in &self.apps {
            f.push(a.program.clone());
            f.push(a.count.to_string());
            f.push(a.wdir.clone().unwrap_or_default());
            f.push(a.host.clone().unwrap_or_default());
            f.push(a.args.len().to_string());
            f.extend(a.args.iter().cloned());
        }
        if let Some(bad) = f.iter().find(|s| s.contains('\0')) {
            return Err(format!("a spawn field contains a NUL byte: {bad:?}"));
        }
        Ok(hex(f.join("\0").as_bytes()))
    }

    pub fn decode(text: &str) -> Result<SpawnRequest, String> {
        let bytes = crate::auth::unhex(text).ok_or("a spawn request is not hex")?;
        let s = String::from_utf8(bytes).map_err(|_| "a spawn request is not UTF-8")?;
        let mut f = s.split('\0');
        let mut next = |what: &str| f.next().map(str::to_string).ok_or(format!("a spawn request lacks its {what}"));
        let num = |v: String, what: &str| v.parse::<u32>().map_err(|_| format!("a spawn request's {what} is not a number: {v:?}"));
        let port = next("port")?;
        let napps = num(next("command count")?, "command count")?;
        let mut apps = Vec::new();
        for _ in 0..napps.min(MAX_SPAWN) {
            let program = next("program")?;
            let count = num(next("process count")?, "process count")?;
            let opt = |v: String| (!v.is_empty()).then_some(v);
            let wdir = opt(next("directory")?);
            let host = opt(next("host")?);
            let nargs = num(next("argument count")?, "argument count")?;
            let args = (0..nargs).map(|_| next("argument")).collect::<Result<Vec<_>, _>>()?;
            apps.push(SpawnApp { program, args, count, wdir, host });
        }
        let r = SpawnRequest { port, apps };
        if r.apps.is_empty() || r.total() == 0 || r.total() > MAX_SPAWN || r.apps.iter().any(|a| a.program.is_empty()) {
            return Err(format!("a spawn request must start 1..={MAX_SPAWN} processes of named programs"));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_survives_the_trip_with_awkward_arguments() {
        let r = SpawnRequest {
            port: "wanmpi-port:1:127.0.0.1:5000:ab".into(),
            apps: vec![
                SpawnApp {
                    program: "/bin/a b".into(),
                    args: vec!["".into(), "x y".into(), "$(rm -rf /); 'q'".into()],
                    count: 2,
                    wdir: Some("/tmp".into()),
                    host: None,
                },
                SpawnApp { program: "c".into(), args: vec![], count: 1, wdir: None, host: Some("h1".into()) },
            ],
        };
        let line = r.encode().expect("encode");
        assert!(line.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(SpawnRequest::decode(&line).expect("decode"), r);
    }

    #[test]
    fn a_failure_key_holds_no_secret() {
        let port = crate::port::PortName { host: "h".into(), port: 9, secret: [0x5a; 32] };
        let key = failure_key(&port.render());
        assert!(!key.contains("5a5a5a5a"), "{key}");
        assert_eq!(key, failure_key(&port.render()));
        assert_ne!(key, failure_key(&crate::port::PortName { secret: [1; 32], ..port }.render()));
        crate::proto::check_item("key", &key).expect("a valid key");
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(SpawnRequest::decode("zz").is_err());
        assert!(SpawnRequest::decode(&hex(b"port\x001\x00prog")).unwrap_err().contains("process count"));
        assert!(SpawnRequest::decode(&hex(b"port\x001\x00prog\x000\x00\x00\x000")).is_err(), "zero processes");
        let nul = SpawnRequest { port: "p".into(), apps: vec![SpawnApp { program: "a\0b".into(), args: vec![], count: 1, wdir: None, host: None }] };
        assert!(nul.encode().is_err());
    }
}
