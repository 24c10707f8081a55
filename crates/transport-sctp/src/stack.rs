//! The process-wide usrsctp stack.
//!
//! This module holds the one piece of process-global state in this crate,
//! because the C library itself is global: `usrsctp_init_nothreads` may run
//! once per process, its output callback is one C function pointer that
//! receives only an AF_CONN address, and its timers advance for everyone at
//! once. So: a use count (init with the first transport, `usrsctp_finish`
//! after the last), one clock for `usrsctp_handle_timers`, and a registry
//! from AF_CONN token to link. Tokens are plain integers, never pointers to
//! Rust memory, so a late callback for a closed transport finds nothing and
//! drops the packet instead of touching freed memory.

use crate::error::SctpError;
use crate::link::Link;
use crate::options::{Checksum, SctpOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// usrsctp's own timer thread ticks every 10 ms; we tick at least as often.
pub const TICK: Duration = Duration::from_millis(10);

/// How long the last transport waits for usrsctp to free its sockets.
const FINISH_LIMIT: Duration = Duration::from_secs(3);

struct Global {
    users: usize,
    initialized: bool,
    last_tick: Instant,
    checksum: Checksum,
    next_port: u16,
}

static GLOBAL: Mutex<Option<Global>> = Mutex::new(None);
static LINKS: RwLock<BTreeMap<usize, Arc<Link>>> = RwLock::new(BTreeMap::new());
static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

/// A transport's share of the stack; dropping the last one finishes usrsctp.
pub(crate) struct StackUser {
    pub port: u16,
}

fn lock() -> std::sync::MutexGuard<'static, Option<Global>> {
    GLOBAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Joins the stack (initialising it if this is the first user) and picks an
/// SCTP port unique in this process.
pub(crate) fn acquire(opts: &SctpOptions) -> Result<StackUser, SctpError> {
    let mut g = lock();
    let g = g.get_or_insert_with(|| Global { users: 0, initialized: false, last_tick: Instant::now(), checksum: opts.checksum, next_port: 5000 });
    if g.users > 0 && g.checksum != opts.checksum {
        return Err(SctpError::GlobalConflict(format!("checksum {:?} requested, {:?} in use by another transport", opts.checksum, g.checksum)));
    }
    if !g.initialized {
        // SAFETY: called once per init/finish cycle, under the global lock.
        unsafe { usrsctp_sys::usrsctp_init_nothreads(0, Some(conn_output), None) };
        g.initialized = true;
        g.last_tick = Instant::now();
    }
    g.checksum = opts.checksum;
    // SAFETY: plain setters of the library's tunables.
    unsafe {
        match opts.checksum {
            Checksum::Usrsctp => usrsctp_sys::usrsctp_disable_crc32c_offload(),
            Checksum::Offload | Checksum::Off => usrsctp_sys::usrsctp_enable_crc32c_offload(),
        }
        // Process-wide in usrsctp; the last transport's value wins.
        usrsctp_sys::usrsctp_sysctl_set_sctp_initial_cwnd(opts.initial_cwnd);
        // With this on (usrsctp's default), hitting max burst also cuts cwnd
        // to flight + burst: every message after an idle moment restarted
        // from 4 MTUs (measured: cwnd stuck at 5856 B). Keep the burst
        // limit, not the cwnd cut.
        usrsctp_sys::usrsctp_sysctl_set_sctp_use_cwnd_based_maxburst(0);
        // usrsctp aborts an association whose chunk was sent more than 30
        // times (sctp_max_retran_chunk), whatever its retransmission limit:
        // with RTO_MAX at 1 s that was a 30 s outage. Process-wide too.
        usrsctp_sys::usrsctp_sysctl_set_sctp_max_retran_chunk(u32::from(opts.assoc_max_retrans()));
        // Process-wide too; only the patched library has a tail-loss probe.
        usrsctp_sys::set_tail_loss_probe(opts.tlp);
    }
    g.users += 1;
    let port = g.next_port;
    g.next_port = if g.next_port >= 60_000 { 5000 } else { g.next_port + 1 };
    Ok(StackUser { port })
}

impl Drop for StackUser {
    fn drop(&mut self) {
        let mut guard = lock();
        let Some(g) = guard.as_mut() else { return };
        g.users = g.users.saturating_sub(1);
        if g.users > 0 || !g.initialized {
            return;
        }
        // usrsctp_finish refuses (-1) while sockets or associations are
        // still being freed by its timers; drive time and retry, bounded.
        let start = Instant::now();
        while start.elapsed() < FINISH_LIMIT {
            advance(g);
            // SAFETY: no socket of ours is open any more.
            if unsafe { usrsctp_sys::usrsctp_finish() } == 0 {
                g.initialized = false;
                return;
            }
            // Nothing to wait on: usrsctp frees sockets on its own timers.
            std::thread::sleep(TICK);
        }
        // Left initialised: the next transport in this process reuses it.
    }
}

/// Runs usrsctp's timers up to now; true if its clock moved.
fn advance(g: &mut Global) -> bool {
    let now = Instant::now();
    let ms = now.duration_since(g.last_tick).as_millis();
    if ms == 0 {
        return false;
    }
    let ms = ms.min(u32::MAX as u128) as u32;
    g.last_tick += Duration::from_millis(u64::from(ms));
    // SAFETY: the stack is initialised while anyone holds a StackUser.
    unsafe { usrsctp_sys::usrsctp_handle_timers(ms) };
    true
}

/// Advances usrsctp's clock to now (one clock for the whole process, so two
/// transports ticking never count the same milliseconds twice). True if
/// timers ran (they may have queued notifications, e.g. a lost peer).
pub(crate) fn tick() -> bool {
    let mut guard = lock();
    match guard.as_mut() {
        Some(g) if g.initialized => advance(g),
        _ => false,
    }
}

pub(crate) fn new_token() -> usize {
    NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
}

pub(crate) fn register_link(link: Arc<Link>) {
    LINKS.write().unwrap_or_else(|e| e.into_inner()).insert(link.token, link);
}

pub(crate) fn unregister_link(token: usize) {
    LINKS.write().unwrap_or_else(|e| e.into_inner()).remove(&token);
}

/// usrsctp's output callback: `addr` is the destination's AF_CONN address,
/// i.e. our token.
unsafe extern "C" fn conn_output(addr: *mut libc::c_void, buffer: *mut libc::c_void, length: libc::size_t, _tos: u8, _set_df: u8) -> libc::c_int {
    let link = LINKS.read().unwrap_or_else(|e| e.into_inner()).get(&(addr as usize)).cloned();
    if let Some(link) = link {
        if !buffer.is_null() {
            // SAFETY: usrsctp passes a buffer of `length` bytes it owns for
            // the duration of the call.
            let packet = std::slice::from_raw_parts_mut(buffer.cast::<u8>(), length);
            link.output(packet);
        }
    }
    0
}

/// usrsctp's process-wide statistics.
pub fn global_stats() -> usrsctp_sys::sctpstat {
    let mut s = usrsctp_sys::sctpstat::default();
    let guard = lock();
    if guard.as_ref().is_some_and(|g| g.initialized) {
        // SAFETY: fills the struct we own; the stack is initialised.
        unsafe { usrsctp_sys::usrsctp_get_stat(&mut s) };
    }
    s
}
