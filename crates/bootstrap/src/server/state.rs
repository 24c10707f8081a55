//! The job's shared key/value table and fence, the ranks' connections
//! (to push lines to them: `push.rs`), the deaths the launcher reported and
//! the agreements still open (`agree.rs`).

use super::agree::{Agreements, Decided};
use super::limits::{Handshakes, RefusalLog};
use super::{ServerConfig, ServerEvent, Sink};
use crate::addr::Stream;
use crate::push::Push;
use crate::sealed_lines::{self, LineKeys};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// The sending half of a rank's connection: replies and pushes take turns
/// under its lock (the sealing counter must see them in the order sent).
pub struct Writer {
    pub stream: Stream,
    pub keys: Option<LineKeys>,
}

impl Writer {
    pub fn send(&mut self, line: &str) -> std::io::Result<()> {
        sealed_lines::write_lines(&mut self.stream, self.keys.as_mut(), &[line])
    }
}

pub type SharedWriter = Arc<Mutex<Writer>>;

fn send_to(w: &SharedWriter, line: &str) {
    // A rank that stopped reading or went away: its own end is reported
    // elsewhere (the launcher sees its process); a push is best effort.
    let _ = w.lock().unwrap_or_else(|p| p.into_inner()).send(line);
}

pub struct Shared {
    pub config: ServerConfig,
    pub sink: Sink,
    pub stopping: AtomicBool,
    pub handshakes: Handshakes,
    pub refusals: RefusalLog,
    state: Mutex<State>,
    fence_done: Condvar,
}

#[derive(Default)]
struct State {
    table: HashMap<String, String>,
    /// Completed fences so far; a waiter leaves when this moves.
    fence_generation: u64,
    arrived: BTreeSet<u32>,
    finalized: BTreeSet<u32>,
    /// Set when the job ends: every waiter returns this.
    ended: Option<String>,
    /// Clones of live connections, to close them when the job ends.
    streams: Vec<Stream>,
    /// Each connected rank's sending half, for pushes.
    writers: HashMap<u32, SharedWriter>,
    /// Ranks the launcher saw die, and how.
    dead: BTreeMap<u32, String>,
    agreements: Agreements,
}

impl Shared {
    pub fn new(config: ServerConfig, sink: Sink) -> Shared {
        Shared {
            handshakes: Handshakes::new(config.max_handshakes),
            refusals: RefusalLog::new(),
            config,
            sink,
            stopping: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            fence_done: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another connection thread must not take the job down.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn register(&self, s: Stream) {
        let mut st = self.lock();
        if st.ended.is_some() {
            let _ = s.shutdown();
        }
        st.streams.push(s);
    }

    /// Registers `rank`'s sending half; it hears of the deaths so far.
    pub fn register_writer(&self, rank: u32, w: SharedWriter) {
        let earlier: Vec<String> = {
            let mut st = self.lock();
            st.writers.insert(rank, w.clone());
            st.dead.iter().map(|(r, why)| Push::Dead { rank: *r, reason: why.clone() }.render()).collect()
        };
        for line in earlier {
            send_to(&w, &line);
        }
    }

    /// The launcher saw `rank`'s process end (not after a clean finalize):
    /// every other connected rank is told, and agreements waiting only for
    /// it end.
    pub fn died(&self, rank: u32, reason: &str) {
        let (writers, decided) = {
            let mut st = self.lock();
            if st.dead.insert(rank, reason.to_string()).is_some() {
                return;
            }
            st.writers.remove(&rank);
            let dead: BTreeSet<u32> = st.dead.keys().copied().collect();
            let decided = st.agreements.on_death(&dead);
            (st.writers.values().cloned().collect::<Vec<_>>(), decided)
        };
        let line = Push::Dead { rank, reason: reason.to_string() }.render();
        for w in &writers {
            send_to(w, &line);
        }
        self.tell(decided);
    }

    /// `rank` joins an agreement (see `agree.rs`).
    pub fn agree(&self, rank: u32, id: &str, members: Vec<u32>, acked: Vec<u32>, value: &[u8]) {
        let decided = {
            let mut st = self.lock();
            let dead: BTreeSet<u32> = st.dead.keys().copied().collect();
            st.agreements.join(rank, id, members, acked, value, &dead)
        };
        self.tell(decided.into_iter().collect());
    }

    /// `rank` revoked the communicator `id`: its other members hear.
    pub fn revoke(&self, rank: u32, id: &str, members: &[u32]) {
        let writers: Vec<SharedWriter> = {
            let st = self.lock();
            members.iter().filter(|m| **m != rank).filter_map(|m| st.writers.get(m).cloned()).collect()
        };
        let line = Push::Revoked { id: id.to_string() }.render();
        for w in &writers {
            send_to(w, &line);
        }
    }

    fn tell(&self, decided: Vec<Decided>) {
        for d in decided {
            let line = d.push.render();
            let writers: Vec<SharedWriter> = {
                let st = self.lock();
                d.tell.iter().filter_map(|r| st.writers.get(r).cloned()).collect()
            };
            for w in &writers {
                send_to(w, &line);
            }
        }
    }

    pub fn put(&self, key: String, value: String) {
        self.lock().table.insert(key, value);
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.lock().table.get(key).cloned()
    }

    pub fn finalize(&self, rank: u32) {
        self.lock().finalized.insert(rank);
    }

    pub fn finalized(&self) -> Vec<u32> {
        self.lock().finalized.iter().copied().collect()
    }

    /// Waits until every rank reached this fence. `Err` says why not.
    pub fn fence(&self, rank: u32) -> Result<(), String> {
        let mut st = self.lock();
        if let Some(why) = &st.ended {
            return Err(why.clone());
        }
        let generation = st.fence_generation;
        st.arrived.insert(rank);
        if st.arrived.len() as u64 >= u64::from(self.config.size) {
            st.arrived.clear();
            st.fence_generation += 1;
            self.fence_done.notify_all();
            return Ok(());
        }
        let deadline = Instant::now() + self.config.fence_timeout;
        loop {
            if st.fence_generation != generation {
                return Ok(());
            }
            if let Some(why) = &st.ended {
                return Err(why.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                st.arrived.remove(&rank);
                let missing: Vec<u32> = (0..self.config.size).filter(|r| !st.arrived.contains(r) && *r != rank).collect();
                drop(st);
                (self.sink)(ServerEvent::FenceTimeout { rank, missing: missing.clone() });
                return Err(format!(
                    "fence timed out after {:.0?}; ranks not there: {}",
                    self.config.fence_timeout,
                    missing.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",")
                ));
            }
            st = self.fence_done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Ends the job: fences fail with `why`, connections close.
    pub fn end_all(&self, why: &str) {
        let mut st = self.lock();
        st.ended.get_or_insert_with(|| why.to_string());
        for s in st.streams.drain(..) {
            let _ = s.shutdown();
        }
        self.fence_done.notify_all();
    }
}
