//! The process runtime: one engine, one transport, the communicators, behind
//! one lock. Every MPI call locks, does its work and a progress step, and
//! unlocks; blocking calls wait for the transport's readiness outside the
//! lock, so the optional progress thread can advance messages meanwhile.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wanmpi_bootstrap::Launcher;
use wanmpi_engine::{Engine, ErrorClass, MpiError, MpiResult};
use wanmpi_transport::Transport;

use crate::bsend::BsendPool;
use crate::comm::CommTable;
use crate::context::ContextPool;
use crate::options::RuntimeOptions;
use crate::reqtable::ReqTable;

/// Everything the lock protects.
pub struct State {
    pub engine: Engine,
    pub transport: Box<dyn Transport>,
    pub comms: CommTable,
    pub reqs: ReqTable,
    pub contexts: ContextPool,
    pub bsend: BsendPool,
    pub messages: crate::mprobe::MessageTable,
    /// The transport said it still holds unsent data: flush it on the next
    /// progress step. Flushing only then spares transports whose flush is a
    /// full pump (sctp) a second pass on every step.
    pub transport_busy: bool,
    /// Events the transport delivered so far: the progress thread wakes a
    /// sleeping caller when it took some (see `Runtime::waker`).
    pub arrivals: u64,
    /// Progress steps that delivered or sent something: a waiting call
    /// re-tests its requests only when this moved (see `wait_until`).
    pub activity: u64,
    /// A fatal error seen during progress (a lost peer without
    /// --tolerate-rank-failure); reported by the next call.
    pub fatal: Option<MpiError>,
    /// Which peers are far, and their WAN windows.
    pub wan: crate::wan::WanPlan,
    /// Collectives whose schedules progress advances.
    pub colls: crate::icoll::Colls,
    /// Context pairs held by running votes of communicator agreements (`agree.rs`).
    pub reservations: crate::agree::Reservations,
    /// One-sided windows, served by every progress step.
    pub wins: crate::rma::Windows,
    /// `transport` is a `Joined`: processes of other jobs can be attached.
    pub joined: bool,
    /// ULFM: failures known and acknowledged, agreements (`ulfm/`).
    pub ulfm: crate::ulfm::Ulfm,
}

pub struct Runtime {
    pub(crate) state: Mutex<State>,
    pub(crate) rank: u32,
    pub(crate) size: u32,
    pub(crate) opts: RuntimeOptions,
    /// Readiness fd of the transport (-1: none), polled outside the lock;
    /// it changes when processes of another job are first attached.
    pub(crate) ready_fd: AtomicI32,
    /// Blocked calls asleep, rung by whoever takes arrivals meanwhile.
    sleepers: crate::sleepers::Sleepers,
    pub(crate) kv: Mutex<Option<Box<dyn Launcher>>>,
    pub(crate) started: Instant,
    stop: Arc<AtomicBool>,
    pub(crate) progress_thread: Mutex<Option<JoinHandle<()>>>,
    pub(crate) finalized: AtomicBool,
    /// Every rank's site, settled at init (`sites.rs`); until then one site.
    pub(crate) sites: std::sync::OnceLock<crate::sites::SiteMap>,
    /// Dynamic processes: open ports, the parent communicator, this job's
    /// identity among jobs (`dynamic/`).
    pub(crate) dynamic: crate::dynamic::DynamicState,
    /// Collective traffic that crossed sites, for the tool interface (`tool.rs`).
    pub(crate) coll_wan: crate::tool::CollWan,
}

impl Runtime {
    pub(crate) fn assemble(state: State, opts: RuntimeOptions, kv: Option<Box<dyn Launcher>>) -> Runtime {
        let ready_fd = AtomicI32::new(state.transport.readiness_fd().unwrap_or(-1));
        let rank = state.engine.rank();
        let size = state.engine.size();
        Runtime {
            state: Mutex::new(state),
            rank,
            size,
            opts,
            ready_fd,
            sleepers: Default::default(),
            kv: Mutex::new(kv),
            started: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            progress_thread: Mutex::new(None),
            finalized: AtomicBool::new(false),
            sites: std::sync::OnceLock::new(),
            dynamic: Default::default(),
            coll_wan: Default::default(),
        }
    }

    pub fn rank(&self) -> u32 {
        self.rank
    }
    pub fn size(&self) -> u32 {
        self.size
    }
    pub fn options(&self) -> &RuntimeOptions {
        &self.opts
    }
    /// The site of world rank `r` (0 for every rank until init settled the map).
    pub fn site_of(&self, r: u32) -> usize {
        self.sites.get().map_or(0, |m| m.site_of(r))
    }

    /// Seconds since the runtime started (MPI_Wtime).
    pub fn wtime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the engine mid-update: there
        // is nothing safe to continue with.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One progress step under the lock: drain arrivals, send what can go.
    pub(crate) fn progress(&self, st: &mut State) -> MpiResult<()> {
        // The launcher's word on deaths and revokes (ULFM) when the job
        // outlives a failure, and on a pending iagree or ishrink always.
        self.ulfm_tick(st);
        let State { engine, transport, arrivals, .. } = st;
        let io = |e: wanmpi_transport::TransportError| MpiError::new(ErrorClass::Other, format!("transport: {e}"));
        let got = transport.poll_recv(&mut |ev| engine.handle_incoming(ev)).map_err(io)? as u64;
        *arrivals += got;
        // What arrived may be another thread's, asleep: it announced itself
        // before its last look under this lock, so it is counted here.
        if got > 0 {
            self.sleepers.wake_all();
        }
        // A schedule's next round may wait only on sends that left: advance
        // before the idle check.
        if !st.colls.is_empty() {
            crate::icoll::advance(st);
        }
        if !st.wins.is_empty() {
            crate::rma::serve(st);
        }
        let State { engine, transport, transport_busy, wan, activity, .. } = st;
        // An idle step (nothing came, nothing queued, nothing held back) is
        // what a blocked call spins on: it stops here, cheaply.
        if got == 0 && !*transport_busy && !engine.has_pending_output() {
            return self.check_fatal(st);
        }
        wan.refresh(engine, transport.as_ref());
        let mut sent = false;
        engine
            .transmit(&mut |p, c, parts| {
                sent = true;
                transport.try_send(p, c, parts)
            })
            .map_err(io)?;
        if sent || *transport_busy || engine.has_pending_output() {
            *transport_busy = transport.flush().map_err(io)?;
        }
        if got > 0 || sent {
            *activity += 1;
        }
        self.check_fatal(st)
    }

    /// A lost peer ends the job unless the job tolerates rank failure.
    fn check_fatal(&self, st: &mut State) -> MpiResult<()> {
        // No peer lost (the usual case): nothing to look up.
        if st.fatal.is_none() && st.engine.lost_peers().is_empty() {
            return Ok(());
        }
        if !self.opts.tolerate_rank_failure && st.fatal.is_none() {
            if let Some((peer, reason)) = st.engine.failed_peers().next() {
                let who = self.dynamic.describe(*peer).unwrap_or_else(|| format!("rank {peer}"));
                st.fatal = Some(MpiError::new(ErrorClass::ProcFailed, format!("lost {who}: {reason}")));
            }
        }
        if let Some(e) = &st.fatal {
            let e = e.clone();
            self.die(&e.to_string(), 1);
        }
        Ok(())
    }

    /// Waits until `done` says yes, making progress. `done` runs under the
    /// lock: at first, after any progress step that moved something (see
    /// `State::activity`), after a sleep, and every `RECHECK_EVERY` idle
    /// spins for what changes without traffic (another thread's cancel).
    pub(crate) fn wait_until<T>(&self, done: impl FnMut(&mut State) -> MpiResult<Option<T>>) -> MpiResult<T> {
        self.wait_until_after(0, done)
    }

    /// `wait_until` for a caller that already spun `spun` rounds (the
    /// express receive): it yields the CPU that much sooner.
    pub(crate) fn wait_until_after<T>(&self, spun: u32, mut done: impl FnMut(&mut State) -> MpiResult<Option<T>>) -> MpiResult<T> {
        const RECHECK_EVERY: u32 = 32;
        const FAST_SPINS: u32 = 256;
        // A yield with nothing else to run is a syscall: not in the first
        // rounds, where a busy peer's answer comes (yielding after 32 made
        // a quiet 1-byte shm round trip about 9 % slower).
        const YIELD_AFTER: u32 = 256;
        const YIELD_EVERY: u32 = 2;
        // Ranks that share their CPUs give them away at once.
        let (yield_after, yield_every) = if self.opts.oversubscribed { (0, 1) } else { (YIELD_AFTER, YIELD_EVERY) };
        let mut idle_rounds = spun;
        let mut seen: Option<u64> = None;
        loop {
            let pending_out = {
                let mut st = self.lock();
                self.progress(&mut st)?;
                if seen != Some(st.activity) || idle_rounds.is_multiple_of(RECHECK_EVERY) {
                    seen = Some(st.activity);
                    if let Some(v) = done(&mut st)? {
                        return Ok(v);
                    }
                }
                // Data the transport holds back (paced) also needs the next step soon.
                st.engine.has_pending_output() || st.transport_busy
            };
            idle_rounds += 1;
            if idle_rounds < self.opts.spin_rounds {
                if idle_rounds > yield_after && idle_rounds.is_multiple_of(yield_every) {
                    // Past the first rounds, give the CPU away now and then:
                    // when the peer shares this core (more ranks than free
                    // cores) its answer can only come while we are off it,
                    // and a spin until the sleep would cost it a whole
                    // spin phase per message (tens to hundreds of us).
                    std::thread::yield_now();
                } else if idle_rounds > FAST_SPINS {
                    // No `pause` in the first rounds: it costs up to ~140
                    // cycles on recent x86, which a message arriving now
                    // would wait out.
                    std::hint::spin_loop();
                }
                continue;
            }
            // Sleep on the transport outside the lock; a short bound keeps
            // output queues and timers moving. Announced first, then one
            // more look: a thread that took our message before the
            // announcement could not know to wake us.
            let timeout = if pending_out { Duration::from_micros(200) } else { Duration::from_millis(20) };
            let asleep = self.sleepers.announce();
            {
                let mut st = self.lock();
                self.progress(&mut st)?;
                if let Some(v) = done(&mut st)? {
                    return Ok(v);
                }
            }
            self.block_on_transport(timeout, asleep.as_ref().map_or(-1, |a| a.fd()));
            drop(asleep);
            seen = None;
        }
    }

    /// Sleeps until the transport is ready, `waker` (a caller's own eventfd;
    /// -1 for the progress thread, which rings and is never rung) fires, or
    /// `timeout` passes.
    fn block_on_transport(&self, timeout: Duration, waker: RawFd) {
        match Some(self.ready_fd.load(Ordering::Relaxed)).filter(|fd| *fd >= 0) {
            Some(fd) => {
                if !self.lock().transport.prepare_sleep() {
                    return; // something arrived meanwhile
                }
                let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }, libc::pollfd { fd: waker, events: libc::POLLIN, revents: 0 }];
                let ms = timeout.as_millis().clamp(0, i32::MAX as u128) as i32;
                // SAFETY: a valid pollfd array of the length passed (a negative fd is ignored).
                unsafe { libc::poll(p.as_mut_ptr(), 2, ms.max(if timeout.is_zero() { 0 } else { 1 })) };
                if p[1].revents != 0 {
                    let mut v = 0u64;
                    // SAFETY: reads 8 bytes into v from our own nonblocking eventfd.
                    unsafe { libc::read(waker, (&mut v as *mut u64).cast(), 8) };
                }
            }
            // Nothing to poll: nap without the lock, which a caller (or the
            // progress thread) waiting for it would otherwise never get.
            None => std::thread::sleep(timeout.min(Duration::from_millis(1))),
        }
    }

    /// Starts the progress thread (WANMPI_PROGRESS_THREAD=1): it keeps
    /// draining and sending while the application computes, so rendezvous
    /// handshakes and long messages advance without MPI calls.
    pub(crate) fn start_progress_thread(self: &Arc<Self>) {
        let rt = Arc::clone(self);
        let stop = Arc::clone(&self.stop);
        let h = std::thread::Builder::new()
            .name("wanmpi-progress".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // `progress` wakes a caller asleep on what it took.
                    let pending = {
                        let mut st = rt.lock();
                        let _ = rt.progress(&mut st);
                        st.engine.has_pending_output()
                    };
                    let t = if pending { Duration::from_micros(100) } else { rt.opts.progress_interval };
                    rt.block_on_transport(t, -1);
                }
            })
            .ok();
        *self.progress_thread.lock().unwrap_or_else(|p| p.into_inner()) = h;
    }

    /// Starts the progress thread unless it runs: one-sided targets must
    /// answer while the program computes (passive target).
    pub fn ensure_progress_thread(self: &Arc<Self>) {
        if self.progress_thread.lock().unwrap_or_else(|p| p.into_inner()).is_none() && !self.finalized.load(Ordering::Relaxed) {
            self.start_progress_thread();
        }
    }

    pub(crate) fn stop_progress_thread(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.progress_thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = h.join();
        }
    }

    /// Ends the whole job: tells the launcher (which stops every rank) and
    /// exits. Used by MPI_Abort and fatal error handlers.
    pub fn die(&self, msg: &str, code: i32) -> ! {
        eprintln!("wanmpi: rank {}: {msg}; aborting the job", self.rank);
        if let Ok(mut kv) = self.kv.try_lock() {
            if let Some(c) = kv.as_mut() {
                let _ = c.abort(code, &format!("rank {}: {msg}", self.rank));
            }
        }
        std::process::exit(if code == 0 { 1 } else { code });
    }
}
