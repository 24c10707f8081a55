//! The accepting side of a port: every connection that has not yet proved
//! the secret waits in one bounded table, all of them polled together, so
//! a stranger's idle or trickling connection delays nobody.
//!
//! - At most `MAX_WAITING` connections wait at once; a new one past that
//!   drops the oldest (told `busy`: a real connector tries again, see
//!   `connect.rs`), so a flood cannot hold the door: the kernel's backlog
//!   is emptied at every wake-up.
//! - Each has `GREETING_LIMIT` from its arrival to send its request line;
//!   a root's request comes one round trip after the greeting.
//! - A wrong proof is answered `refused` and reported on stderr, the first
//!   `REPORT_EACH` one by one, the rest counted in one line at the end.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::connect::{line_to, settle};
use super::link::RootLink;
use super::name::PortName;
use super::Peer;
use crate::auth::{self, Role};
use crate::proto::{self, one_line};
use crate::BootstrapError;

/// Connections proving the secret at once, at most.
pub const MAX_WAITING: usize = 64;
/// How long a connection may take from its arrival to its request.
pub const GREETING_LIMIT: Duration = Duration::from_millis(1500);
/// Refusals reported one by one per accept, before they are only counted.
const REPORT_EACH: usize = 5;

/// How an accept ended without a joining group.
#[derive(Debug)]
pub enum AcceptError {
    /// The launcher reports that the processes of a spawn did not start.
    Failed(String),
    TimedOut(Duration),
    Io(std::io::Error),
}

impl std::fmt::Display for AcceptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcceptError::Failed(t) => write!(f, "{t}"),
            AcceptError::TimedOut(d) => write!(f, "nobody connected within {} s", d.as_secs_f64()),
            AcceptError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// An open port.
pub struct Port {
    listener: TcpListener,
    name: PortName,
    /// Kept from one accept to the next: a caller that accepts in slices
    /// (a spawn, looking for mpirun's note between them) must not drop a
    /// connector one round trip from its answer at each slice's end.
    door: Mutex<Door>,
}

#[derive(Default)]
struct Door {
    waiting: VecDeque<Waiting>,
    dropped: Dropped,
    /// Whose port, for the report (the last accept's `who`).
    who: String,
}

/// A connection that has been greeted and not yet answered.
struct Waiting {
    stream: TcpStream,
    from: SocketAddr,
    nonce: String,
    line: Vec<u8>,
    until: Instant,
}

/// What a complete request line came to.
enum Verdict {
    Join(Box<Peer>),
    Failed(String),
    Refused(String),
}

/// Connections dropped since the last report.
#[derive(Default)]
struct Dropped {
    refused: usize,
    idle: usize,
    evicted: usize,
}

impl Port {
    /// Listens on `bind` (port in `range` when given) and names the port
    /// after `advertise`, the address others reach this process at.
    pub fn open(bind: &str, advertise: &str, range: Option<crate::PortRange>) -> Result<Port, BootstrapError> {
        let listener = crate::ports::bind_in(range, |p| TcpListener::bind((bind, p)))?;
        listener.set_nonblocking(true)?;
        // Room in the kernel's queue for a burst of strangers between two
        // wake-ups (std listens with a short one); the table bounds the rest.
        // SAFETY: listen on our own listening socket only resizes its queue.
        unsafe { libc::listen(listener.as_raw_fd(), 1024) };
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).map_err(|e| BootstrapError::Protocol(format!("no randomness for a port secret: {e}")))?;
        let name = PortName { host: advertise.to_string(), port: listener.local_addr()?.port(), secret };
        Ok(Port { listener, name, door: Mutex::default() })
    }

    /// The whole name, secret included (MPI_Open_port's result).
    pub fn name(&self) -> String {
        self.name.render()
    }

    /// The port as messages show it (`host:port`).
    pub fn shown(&self) -> String {
        self.name.redacted()
    }

    /// Waits up to `limit` for a connector that proves the secret; others
    /// are refused and named on stderr (`who` says whose port it is).
    pub fn accept(&self, my_size: u32, limit: Duration, who: &str) -> Result<Peer, AcceptError> {
        let deadline = Instant::now() + limit;
        let mut door = self.door.lock().unwrap_or_else(|p| p.into_inner());
        let Door { waiting: table, dropped, who: last_who } = &mut *door;
        who.clone_into(last_who);
        let result = loop {
            let now = Instant::now();
            if now >= deadline {
                break Err(AcceptError::TimedOut(limit));
            }
            let before = table.len();
            table.retain(|w| w.until > now);
            dropped.idle += before - table.len();
            let wake = table.iter().map(|w| w.until).min().unwrap_or(deadline).min(deadline);
            let mut fds: Vec<libc::pollfd> = std::iter::once(self.listener.as_raw_fd())
                .chain(table.iter().map(|w| w.stream.as_raw_fd()))
                .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
                .collect();
            let ms = wake.saturating_duration_since(now).as_millis().clamp(1, 1000) as i32;
            // SAFETY: `fds` is a valid array of pollfd of the given length.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            // First the connections already waiting (one that answered must
            // not be dropped for one that only arrived), then new ones.
            let ready: Vec<bool> = fds[1..].iter().map(|p| p.revents != 0).collect();
            if let Some(end) = self.serve_ready(table, &ready, my_size, who, dropped) {
                break end;
            }
            if fds[0].revents != 0 {
                if let Err(e) = self.admit_all(table, dropped) {
                    break Err(AcceptError::Io(e));
                }
            }
        };
        // A slice's end is no end: the report waits for a joining group,
        // a failure, or the port's closing.
        if !matches!(result, Err(AcceptError::TimedOut(_))) {
            door.report(self.name.port);
        }
        result
    }

    /// Takes every connection the kernel holds, greeting each; the oldest
    /// waiting make room when the table is full.
    fn admit_all(&self, table: &mut VecDeque<Waiting>, dropped: &mut Dropped) -> std::io::Result<()> {
        loop {
            let (stream, from) = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted || e.kind() == std::io::ErrorKind::ConnectionAborted => continue,
                // Out of descriptors: the waiting ones free some as they end.
                Err(e) if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) => match table.pop_front() {
                    Some(old) => {
                        tell(&old.stream, "busy");
                        dropped.evicted += 1;
                        continue;
                    }
                    None => return Ok(()),
                },
                Err(e) => return Err(e),
            };
            let Ok(nonce) = auth::nonce() else { continue };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = stream.set_nodelay(true);
            // A fresh socket's buffer takes a line: a short write is a broken peer.
            let greeting = format!("wanmpi-port 1 {nonce}\n");
            if (&stream).write(greeting.as_bytes()).map_or(true, |n| n < greeting.len()) {
                continue;
            }
            if table.len() >= MAX_WAITING {
                if let Some(old) = table.pop_front() {
                    tell(&old.stream, "busy");
                    dropped.evicted += 1;
                }
            }
            table.push_back(Waiting { stream, from, nonce, line: Vec::new(), until: Instant::now() + GREETING_LIMIT });
        }
    }

    /// Reads what the ready connections sent; the end of the accept if one
    /// joined or reported a failure.
    fn serve_ready(
        &self,
        table: &mut VecDeque<Waiting>,
        ready: &[bool],
        my_size: u32,
        who: &str,
        dropped: &mut Dropped,
    ) -> Option<Result<Peer, AcceptError>> {
        let mut i = 0;
        let mut r = 0;
        while i < table.len() {
            let is_ready = ready.get(r).copied().unwrap_or(false);
            r += 1;
            if !is_ready {
                i += 1;
                continue;
            }
            match read_some(&mut table[i]) {
                Progress::More => i += 1,
                Progress::Gone => {
                    table.remove(i);
                }
                Progress::Line(line) => {
                    let Some(w) = table.remove(i) else { continue };
                    match judge(w.stream, &w.nonce, &line, &self.name.secret, my_size) {
                        Verdict::Join(peer) => return Some(Ok(*peer)),
                        Verdict::Failed(text) => return Some(Err(AcceptError::Failed(text))),
                        Verdict::Refused(why) => {
                            dropped.refused += 1;
                            if dropped.refused <= REPORT_EACH {
                                eprintln!("wanmpi: {who}: refused a connection to port {} from {}: {why}", self.name.port, w.from);
                            }
                        }
                    }
                }
            }
        }
        None
    }
}

impl Door {
    /// One line for the connections dropped quietly since the last.
    fn report(&mut self, port: u16) {
        let d = std::mem::take(&mut self.dropped);
        let quiet = d.refused.saturating_sub(REPORT_EACH) + d.idle + d.evicted;
        if quiet > 0 {
            eprintln!(
                "wanmpi: {}: port {port} dropped {quiet} connection(s) that did not prove its secret ({} refused, {} silent past {} s, {} over {MAX_WAITING} waiting at once)",
                self.who,
                d.refused.saturating_sub(REPORT_EACH),
                d.idle,
                GREETING_LIMIT.as_secs_f64(),
                d.evicted
            );
        }
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        let port = self.name.port;
        self.door.get_mut().unwrap_or_else(|p| p.into_inner()).report(port);
    }
}

enum Progress {
    More,
    Gone,
    Line(String),
}

/// Reads what a waiting connection has sent, without blocking.
fn read_some(w: &mut Waiting) -> Progress {
    let mut buf = [0u8; 512];
    loop {
        match (&w.stream).read(&mut buf) {
            Ok(0) => return Progress::Gone,
            Ok(n) => {
                if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
                    // Nothing may follow the request before our answer.
                    w.line.extend_from_slice(&buf[..end]);
                    return match String::from_utf8(std::mem::take(&mut w.line)) {
                        Ok(l) if end + 1 == n => Progress::Line(l),
                        _ => Progress::Gone,
                    };
                }
                w.line.extend_from_slice(&buf[..n]);
                if w.line.len() > proto::MAX_LINE {
                    return Progress::Gone;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Progress::More,
            Err(_) => return Progress::Gone,
        }
    }
}

/// A best-effort line to a connection being dropped.
fn tell(stream: &TcpStream, word: &str) {
    let _ = (&*stream).write(format!("{word}\n").as_bytes());
}

/// A request line: `join NONCE PROOF SIZE` or `fail NONCE PROOF TEXT`.
fn judge(stream: TcpStream, nonce: &str, line: &str, secret: &[u8; 32], my_size: u32) -> Verdict {
    let words: Vec<&str> = line.splitn(4, ' ').collect();
    let [verb, theirs, proof, rest] = words[..] else {
        tell(&stream, "refused not a port request");
        return Verdict::Refused("not a port request".into());
    };
    if !auth::verify(secret, Role::Client, nonce, 0, proof) {
        tell(&stream, "refused a wrong proof of the port's secret");
        return Verdict::Refused("a wrong proof of the port's secret".into());
    }
    match verb {
        "fail" => Verdict::Failed(rest.to_string()),
        "join" => {
            let Ok(size) = rest.parse::<u32>() else { return Verdict::Refused("a bad group size".into()) };
            let answer = (|| {
                stream.set_nonblocking(false)?;
                stream.set_write_timeout(Some(GREETING_LIMIT))?;
                line_to(&stream, &format!("ok {} {my_size}", auth::prove(secret, Role::Server, theirs, 0)))?;
                settle(&stream)
            })();
            match answer {
                Err(e) => Verdict::Refused(format!("answering it: {e}")),
                Ok(()) => {
                    let key = auth::derive(secret, &format!("joint|{nonce}|{theirs}"));
                    Verdict::Join(Box::new(Peer { link: RootLink::new(stream, &key, true), size, key }))
                }
            }
        }
        _ => Verdict::Refused(format!("unknown request {:?}", one_line(verb))),
    }
}
