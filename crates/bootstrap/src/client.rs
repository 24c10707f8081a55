//! A rank's connection to the launcher's key/value service: plain lines
//! over a Unix socket, sealed records over TCP (`sealed_lines`).

use crate::addr::{BootstrapAddr, Stream};
use crate::auth::{self, Role};
use crate::proto::{self, check_item, Request, VERSION};
use crate::sealed_lines::{self, LineKeys};
use crate::{BootstrapError, JobEnv, KeyValue};
use std::io::BufReader;
use std::time::{Duration, Instant};

/// How a handshake failed: worth another connection, or not.
enum Handshake {
    /// The connection closed or reset under it (the service cut it short).
    CutShort(BootstrapError),
    Final(BootstrapError),
}

impl Handshake {
    fn classify(e: BootstrapError) -> Handshake {
        use std::io::ErrorKind::*;
        match e {
            BootstrapError::Io(ref io) if matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof) => {
                Handshake::CutShort(e)
            }
            e => Handshake::Final(e),
        }
    }
}

/// Implements [`KeyValue`] against the launcher. Puts are kept until the next
/// fence and then sent together with it, so a fence costs one round trip
/// however many keys a rank publishes.
pub struct Client {
    rank: u32,
    size: u32,
    stream: Stream,
    reader: BufReader<Stream>,
    pending: Vec<(String, String)>,
    timeout: Duration,
    /// Set after the handshake when the stream is TCP.
    keys: Option<LineKeys>,
    /// Lines the service pushed (`push.rs`) not yet taken by `poll_pushes`.
    pushes: std::collections::VecDeque<crate::Push>,
    /// The service closed the connection: nothing more will come.
    closed: bool,
    /// What `whoami` answered, once asked (None inside: it could not say).
    seen: Option<Option<std::net::IpAddr>>,
}

impl Client {
    /// Connects to the service named in the job environment; waits are
    /// bounded by `WANMPI_BOOTSTRAP_TIMEOUT` (default 120 s).
    pub fn connect(env: &JobEnv) -> Result<Client, BootstrapError> {
        let addrs = crate::service_addrs::candidates(&env.bootstrap, |k| std::env::var(k).ok())?;
        Client::connect_any(&addrs, env.rank, env.size, &env.secret, crate::timeout_from_env())
    }

    /// Connects to `address` as `rank` of a job of `size` ranks.
    ///
    /// A handshake the service cut short (it keeps only so many connections
    /// proving the secret at once, and a flood of strangers may push this
    /// one out) is tried again on a new connection, with growing pauses,
    /// until `timeout`. A refusal, a service that cannot prove the secret,
    /// or a failure to connect at all is final.
    pub fn connect_to(address: &str, rank: u32, size: u32, secret: &[u8; 32], timeout: Duration) -> Result<Client, BootstrapError> {
        Client::connect_any(&[BootstrapAddr::parse(address)?], rank, size, secret, timeout)
    }

    /// Like `connect_to` with several addresses of the service: the first
    /// to answer is taken (`service_addrs::connect_first`).
    pub fn connect_any(addrs: &[BootstrapAddr], rank: u32, size: u32, secret: &[u8; 32], timeout: Duration) -> Result<Client, BootstrapError> {
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(10);
        loop {
            let stream = crate::service_addrs::connect_first(addrs, timeout.min(Duration::from_secs(30)))?;
            // A fence may last up to the server's timeout; give it some margin.
            stream.set_read_timeout(Some(timeout + Duration::from_secs(5)))?;
            stream.set_write_timeout(Some(timeout))?;
            let reader = BufReader::new(stream.try_clone()?);
            let mut c = Client {
                rank,
                size,
                stream,
                reader,
                pending: Vec::new(),
                timeout,
                keys: None,
                pushes: Default::default(),
                closed: false,
                seen: None,
            };
            match c.handshake(secret) {
                Ok(()) => return Ok(c),
                Err(Handshake::Final(e)) => return Err(e),
                Err(Handshake::CutShort(e)) => {
                    if Instant::now() + pause >= deadline {
                        return Err(e);
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    fn handshake(&mut self, secret: &[u8; 32]) -> Result<(), Handshake> {
        let greeting = self.handshake_reply("the greeting")?;
        let server_nonce = match greeting.split(' ').collect::<Vec<_>>()[..] {
            ["wanmpi-kv", v, nonce] if v == VERSION.to_string() => nonce.to_string(),
            _ => return Err(Handshake::Final(BootstrapError::Protocol(format!("not a wanmpi key/value service: {:?}", proto::one_line(&greeting))))),
        };
        let my_nonce = auth::nonce().map_err(|e| Handshake::Final(BootstrapError::Protocol(format!("no randomness: {e}"))))?;
        let proof = auth::prove(secret, Role::Client, &server_nonce, self.rank);
        self.send(&[Request::Hello { rank: self.rank, nonce: my_nonce.clone(), proof }]).map_err(Handshake::classify)?;
        let reply = self.handshake_reply("hello")?;
        match reply.strip_prefix("ok ") {
            Some(p) if auth::verify(secret, Role::Server, &my_nonce, self.rank, p) => {
                // Everything after the proofs crosses a network sealed.
                if matches!(self.stream, Stream::Tcp(_)) {
                    self.keys = Some(LineKeys::derive(secret, &server_nonce, &my_nonce, self.rank, true));
                }
                Ok(())
            }
            Some(_) => Err(Handshake::Final(BootstrapError::Refused("the service could not prove the job secret".into()))),
            None => Err(Handshake::Final(BootstrapError::Refused(reply.strip_prefix("err ").unwrap_or(&reply).to_string()))),
        }
    }

    fn handshake_reply(&mut self, what: &str) -> Result<String, Handshake> {
        match proto::read_line(&mut self.reader) {
            Ok(Some(l)) => Ok(l),
            Ok(None) => {
                Err(Handshake::CutShort(BootstrapError::Protocol(format!("the service closed the connection (waiting for the reply to {what})"))))
            }
            Err(BootstrapError::Io(e)) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                Err(Handshake::Final(BootstrapError::Timeout(self.timeout, what.to_string())))
            }
            Err(e) => Err(Handshake::classify(e)),
        }
    }

    fn send(&mut self, reqs: &[Request]) -> Result<(), BootstrapError> {
        let lines: Vec<String> = reqs.iter().map(Request::render).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        sealed_lines::write_lines(&mut self.stream, self.keys.as_mut(), &lines)?;
        Ok(())
    }

    fn read_reply(&mut self, what: &str) -> Result<String, BootstrapError> {
        loop {
            let line = self.read_line(what)?;
            match crate::Push::parse(&line) {
                Some(p) => self.pushes.push_back(p),
                None => return Ok(line),
            }
        }
    }

    /// The next line from the service, reply or push.
    fn read_line(&mut self, what: &str) -> Result<String, BootstrapError> {
        match sealed_lines::read_line(&mut self.reader, self.keys.as_mut()) {
            Ok(Some(l)) => Ok(l),
            Ok(None) => Err(BootstrapError::Protocol(format!("the service closed the connection (waiting for the reply to {what})"))),
            Err(BootstrapError::Io(e)) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                Err(BootstrapError::Timeout(self.timeout, what.to_string()))
            }
            Err(e) => Err(e),
        }
    }

    /// Sends one request and expects `ok`.
    fn call_ok(&mut self, req: Request, what: &str) -> Result<(), BootstrapError> {
        self.send(&[req])?;
        expect_ok(self.read_reply(what)?)
    }

    /// Asks the launcher to end the job with exit code `code`; the launcher
    /// prints `message` naming this rank. The caller should then exit.
    pub fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        self.call_ok(Request::Abort { code, message: message.to_string() }, "abort")
    }

    /// Tells the launcher this rank finished MPI cleanly: exiting afterwards
    /// is not a failure, whatever other ranks are still doing.
    pub fn finalize(&mut self) -> Result<(), BootstrapError> {
        self.call_ok(Request::Finalize, "finalize")
    }

    /// Asks the launcher to start `request`'s processes. `Ok` means the
    /// launcher took the request; whether they started, the port hears.
    pub fn spawn(&mut self, request: &crate::SpawnRequest) -> Result<(), BootstrapError> {
        let request = request.encode().map_err(BootstrapError::Protocol)?;
        if request.len() + 8 > proto::MAX_LINE {
            return Err(BootstrapError::Protocol(format!(
                "a spawn request of {} bytes is longer than the launcher takes ({})",
                request.len() / 2,
                proto::MAX_LINE / 2 - 8
            )));
        }
        self.call_ok(Request::Spawn { request }, "spawn")
    }

    /// What the service pushed since the last look (deaths, agreements'
    /// outcomes, revokes), without blocking: lines already read with a
    /// reply, then whatever the socket holds now.
    pub fn poll_pushes(&mut self) -> Vec<crate::Push> {
        while !self.closed && (!self.reader.buffer().is_empty() || readable(self.stream.raw_fd())) {
            match self.read_line("a pushed line") {
                Ok(line) => {
                    // A reply nobody waits for cannot come (requests wait for
                    // theirs); anything else unknown is skipped.
                    if let Some(p) = crate::Push::parse(&line) {
                        self.pushes.push_back(p);
                    }
                }
                Err(_) => self.closed = true,
            }
        }
        self.pushes.drain(..).collect()
    }

    /// The connection's descriptor (pushes make it readable).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.stream.raw_fd()
    }

    /// Joins ULFM agreement `id` (see the server's `agree.rs`); the outcome
    /// comes later as a `Push::Agreed` from `poll_pushes`.
    pub fn agree_start(&mut self, id: &str, members: Vec<u32>, acked: Vec<u32>, value: Vec<u8>) -> Result<(), BootstrapError> {
        check_item("id", id)?;
        let req = Request::Agree { id: id.to_string(), members, acked, value };
        if req.render().len() >= proto::MAX_LINE {
            return Err(BootstrapError::Protocol("an agreement over this many ranks does not fit one line".into()));
        }
        self.send(&[req])
    }

    /// Tells the other `members` that the communicator `id` is revoked.
    pub fn revoke(&mut self, id: &str, members: Vec<u32>) -> Result<(), BootstrapError> {
        check_item("id", id)?;
        let req = Request::Revoke { id: id.to_string(), members };
        if req.render().len() >= proto::MAX_LINE {
            return Err(BootstrapError::Protocol("a revoke over this many ranks does not fit one line".into()));
        }
        self.send(&[req])
    }

    /// Tells the launcher this rank lost contact with `rank`; the launcher
    /// ends the job with a message naming both.
    pub fn report_peer_lost(&mut self, rank: u32, reason: &str) -> Result<(), BootstrapError> {
        self.call_ok(Request::PeerLost { rank, reason: reason.to_string() }, "peer-lost")
    }
}

/// Whether `fd` has something to read (or hung up) right now.
fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}

fn expect_ok(reply: String) -> Result<(), BootstrapError> {
    if reply == "ok" {
        Ok(())
    } else {
        Err(BootstrapError::Protocol(reply.strip_prefix("err ").unwrap_or(&reply).to_string()))
    }
}

impl KeyValue for Client {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn reflector(&self) -> Option<std::net::SocketAddr> {
        match &self.stream {
            Stream::Tcp(s) => s.peer_addr().ok(),
            Stream::Unix(_) => None,
        }
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        check_item("key", key)?;
        check_item("value", value)?;
        self.pending.push((key.to_string(), value.to_string()));
        Ok(())
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        let mut reqs: Vec<Request> = self.pending.drain(..).map(|(key, value)| Request::Put { key, value }).collect();
        let puts = reqs.len();
        reqs.push(Request::Fence);
        self.send(&reqs)?;
        for _ in 0..puts {
            expect_ok(self.read_reply("put")?)?;
        }
        match expect_ok(self.read_reply("fence")?) {
            Err(BootstrapError::Protocol(m)) if m.starts_with("fence timed out") => Err(BootstrapError::Timeout(self.timeout, m)),
            other => other,
        }
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        check_item("key", key)?;
        self.send(&[Request::Get { key: key.to_string() }])?;
        value_of(key, self.read_reply("get")?)
    }
    /// The gets go out together and the service answers them in order;
    /// in batches, so that neither side's socket buffer fills while the
    /// other is still writing.
    fn get_many(&mut self, keys: &[String]) -> Result<Vec<String>, BootstrapError> {
        const BATCH: usize = 256;
        let mut out = Vec::with_capacity(keys.len());
        for batch in keys.chunks(BATCH) {
            for k in batch {
                check_item("key", k)?;
            }
            self.send(&batch.iter().map(|k| Request::Get { key: k.clone() }).collect::<Vec<_>>())?;
            // Every reply is read before any error is returned: the
            // connection stays in step for what comes next.
            let replies: Vec<String> = batch.iter().map(|_| self.read_reply("get")).collect::<Result<_, _>>()?;
            for (k, r) in batch.iter().zip(replies) {
                out.push(value_of(k, r));
            }
        }
        out.into_iter().collect()
    }
    /// Asked once and kept: `whoami`, answered with the connection's
    /// source as the service sees it.
    fn seen_from(&mut self) -> Option<std::net::IpAddr> {
        if self.seen.is_none() {
            let ask = self.send(&[Request::Whoami]).and_then(|()| self.read_reply("whoami"));
            let ip = ask.ok().and_then(|r| r.strip_prefix("seen ").and_then(|a| a.trim().parse().ok()));
            self.seen = Some(ip);
        }
        self.seen.flatten()
    }
}

/// A `get`'s reply: the value, or why there is none.
fn value_of(key: &str, reply: String) -> Result<String, BootstrapError> {
    if let Some(v) = reply.strip_prefix("val ") {
        return Ok(v.to_string());
    }
    if reply == "missing" {
        return Err(BootstrapError::Missing(key.to_string()));
    }
    Err(BootstrapError::Protocol(reply.strip_prefix("err ").unwrap_or(&reply).to_string()))
}
