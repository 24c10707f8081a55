//! The job's shared key/value table and fence.

use super::limits::{Handshakes, RefusalLog};
use super::{ServerConfig, ServerEvent, Sink};
use crate::addr::Stream;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

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
