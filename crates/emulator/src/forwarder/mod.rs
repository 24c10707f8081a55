//! The forwarder: one process that owns every host's TUN device and moves
//! IPv4 packets between them through the link models.
//!
//! Speed: one epoll loop, level-triggered; up to `BATCH` reads per TUN per
//! wake-up; packets live in a recycled pool (no allocation per packet); due
//! packets wait in a binary heap ordered by departure time, woken by a
//! nanosecond timerfd. A packet with nothing to wait for (no delay, no rate
//! cap, nothing queued ahead of it on its link) is written straight from the
//! read buffer, with no copy. TUN has no batched write, so writes are one
//! syscall per packet.

mod ctl;
pub mod link;
mod pool;
mod sys;

use crate::addr::{host_of_addr, tun_name};
use crate::counters::{Counters, GlobalCounters, LinkReport};
use crate::error::{EmuError, Result};
use crate::netns;
use crate::state::State;
use crate::topology::{LinkSel, Topology};
use link::{Link, Verdict};
use pool::{BufId, Pool, SMALL};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

pub use sys::now_ns;

/// Reads per TUN per wake-up, so one busy host cannot starve the others.
const BATCH: usize = 64;
/// Upper bound on packet memory.
const POOL_CAP: usize = 512 << 20;

const TOKEN_TIMER: u64 = u64::MAX;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;
const TOKEN_CTL: u64 = u64::MAX - 2;

/// A packet waiting for its departure time.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    at: u64,
    /// Tie-break: equal times leave in arrival order.
    seq: u64,
    buf: BufId,
    len: u32,
    link: u32,
}

struct ScheduledEvent {
    at: u64,
    sel: LinkSel,
    up: bool,
}

pub(crate) struct Forwarder {
    topo: Topology,
    dir: PathBuf,
    /// Index `host * paths + path`.
    tuns: Vec<OwnedFd>,
    links: Vec<Link>,
    /// Packets of each link still in the heap (a direct write must not pass them).
    queued: Vec<u32>,
    pool: Pool,
    heap: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    read_buf: BufId,
    schedule: Vec<ScheduledEvent>,
    global: GlobalCounters,
    timer: sys::Timer,
    stop: bool,
}

/// Run the forwarder of the emulation in `state_dir` until SIGTERM/SIGINT.
/// Prints `READY` on stdout once every TUN device exists.
pub fn run(state_dir: &Path) -> Result<()> {
    let st = State::load(state_dir)?;
    let conf = state_dir.join("topology.conf");
    let text = std::fs::read_to_string(&conf).map_err(|e| EmuError::io(format!("reading {}", conf.display()), e))?;
    let topo = Topology::parse(&text)?;
    if st.netns.len() != topo.hosts {
        return Err(EmuError::state(state_dir, "state and topology disagree on the host count"));
    }
    sys::prompt_wakeups();
    let tuns = open_tuns(&st, topo.paths)?;

    let io = |what: &str| {
        let what = what.to_string();
        move |e| EmuError::io(what, e)
    };
    let epoll = sys::Epoll::new().map_err(io("epoll"))?;
    for (i, t) in tuns.iter().enumerate() {
        epoll.add(t.as_raw_fd(), i as u64).map_err(io("epoll add tun"))?;
    }
    let timer = sys::Timer::new().map_err(io("timerfd"))?;
    epoll.add(timer.fd(), TOKEN_TIMER).map_err(io("epoll add timer"))?;
    let signals = sys::Signals::new().map_err(io("signalfd"))?;
    epoll.add(signals.fd(), TOKEN_SIGNAL).map_err(io("epoll add signalfd"))?;
    let sock = state_dir.join(crate::control::SOCKET);
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock).map_err(io("binding control socket"))?;
    listener.set_nonblocking(true).map_err(io("control socket"))?;
    epoll.add(listener.as_raw_fd(), TOKEN_CTL).map_err(io("epoll add control"))?;

    let mut fw = Forwarder::new(topo, state_dir.to_path_buf(), tuns, timer)?;
    println!("READY");
    let _ = std::io::stdout().flush();
    fw.event_loop(&epoll, &signals, &listener)?;
    fw.write_counters_file();
    let _ = std::fs::remove_file(&sock);
    Ok(())
}

/// Create `tun0` (and `tun1`) in each host's namespace (for the first host
/// of a site behind NAT: in the site's router) from this thread, then come
/// back to the original namespace.
fn open_tuns(st: &State, paths: u8) -> Result<Vec<OwnedFd>> {
    let home = File::open("/proc/thread-self/ns/net").map_err(|e| EmuError::io("opening own netns", e))?;
    let mut tuns = Vec::new();
    let mut result = Ok(());
    for h in 0..st.netns.len() {
        let ns = st.tun_netns(h).unwrap_or_default();
        if let Err(e) = netns::enter(ns) {
            result = Err(e);
            break;
        }
        for p in 0..paths {
            match crate::tun::open_tun(&tun_name(p)) {
                Ok(fd) => tuns.push(fd),
                Err(e) => {
                    result = Err(EmuError::io(format!("creating {} in {ns}", tun_name(p)), e));
                    break;
                }
            }
        }
        if result.is_err() {
            break;
        }
    }
    netns::setns_file(&home).map_err(|e| EmuError::io("returning to own netns", e))?;
    result.map(|_| tuns)
}

impl Forwarder {
    fn new(topo: Topology, dir: PathBuf, tuns: Vec<OwnedFd>, timer: sys::Timer) -> Result<Self> {
        let mut links = Vec::with_capacity(topo.link_count());
        for i in 0..topo.link_count() {
            let (s, d, p) = topo.link_of_index(i);
            links.push(Link::new(topo.profile_for(s, d, p)?, topo.seed, i as u64));
        }
        let start = now_ns();
        let mut schedule: Vec<ScheduledEvent> =
            topo.schedule.iter().map(|e| ScheduledEvent { at: start + e.at_ns, sel: e.sel.clone(), up: e.up }).collect();
        // pop from the back = earliest first
        schedule.sort_by_key(|e| Reverse(e.at));
        let mut pool = Pool::new(POOL_CAP);
        let read_buf = pool.get(pool::LARGE).ok_or_else(|| EmuError::Forwarder("packet pool empty at start".into()))?;
        let queued = vec![0; links.len()];
        Ok(Forwarder {
            topo,
            dir,
            tuns,
            links,
            queued,
            pool,
            heap: BinaryHeap::with_capacity(4096),
            seq: 0,
            read_buf,
            schedule,
            global: GlobalCounters::default(),
            timer,
            stop: false,
        })
    }

    fn event_loop(&mut self, epoll: &sys::Epoll, signals: &sys::Signals, listener: &UnixListener) -> Result<()> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        while !self.stop {
            let n = epoll.wait(&mut events, -1).map_err(|e| EmuError::io("epoll_wait", e))?;
            for ev in &events[..n] {
                match ev.u64 {
                    TOKEN_TIMER => self.timer.ack(),
                    TOKEN_SIGNAL => self.on_signals(signals),
                    TOKEN_CTL => ctl::accept_all(self, listener),
                    t => {
                        if let Err(fd) = self.read_tun(t as usize) {
                            // a broken TUN (its namespace deleted under us) would
                            // report readiness forever: stop watching it
                            let _ = epoll.del(fd);
                        }
                    }
                }
            }
            let now = now_ns();
            self.run_schedule(now);
            self.release_due(now);
            let next = self.next_deadline();
            self.timer.set(next).map_err(|e| EmuError::io("timerfd_settime", e))?;
        }
        Ok(())
    }

    fn on_signals(&mut self, signals: &sys::Signals) {
        while let Some(sig) = signals.next() {
            match sig {
                libc::SIGTERM | libc::SIGINT => self.stop = true,
                libc::SIGUSR1 => self.write_counters_file(),
                _ => {}
            }
        }
    }

    /// Read a batch from TUN `k`; `Err(fd)` when the device is unusable.
    fn read_tun(&mut self, k: usize) -> std::result::Result<(), std::os::fd::RawFd> {
        let Some(fd) = self.tuns.get(k).map(|t| t.as_raw_fd()) else { return Ok(()) };
        for _ in 0..BATCH {
            match sys::read_fd(fd, self.pool.buf_mut(self.read_buf)) {
                Ok(0) => return Err(fd),
                Ok(n) => self.on_packet(k, n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("wanmpi-emu forwarder: read from tun {k}: {e}; no longer reading it");
                    return Err(fd);
                }
            }
        }
        Ok(())
    }

    /// Route and model one packet that sits in `read_buf`.
    fn on_packet(&mut self, k: usize, n: usize) {
        let paths = self.topo.paths as usize;
        let src = k / paths;
        let b = &self.pool.buf(self.read_buf)[..n];
        if n < 20 || b[0] >> 4 != 4 {
            self.global.not_ipv4 += 1;
            return;
        }
        let dst_ip = [b[16], b[17], b[18], b[19]];
        let Some((dst, path)) = host_of_addr(dst_ip, self.topo.hosts, self.topo.paths).filter(|(d, _)| *d != src) else {
            self.global.no_route += 1;
            return;
        };
        let li = self.topo.link_index(src, dst, path);
        let now = now_ns();
        let Verdict::Deliver { at } = self.links[li].offer(now, n) else { return };
        let out = dst * paths + path as usize;
        if at <= now && self.queued[li] == 0 {
            self.write_out(li, out, self.read_buf, n);
            return;
        }
        // Keep the packet: copy a small one, hand over the read buffer for a large one.
        let kept = if n <= SMALL {
            self.pool.get(n).inspect(|&id| {
                self.pool.copy(self.read_buf, id, n);
            })
        } else {
            self.pool.get(pool::LARGE).map(|fresh| std::mem::replace(&mut self.read_buf, fresh))
        };
        let Some(buf) = kept else {
            self.global.pool_exhausted += 1;
            self.links[li].counters.drop_other += 1;
            return;
        };
        self.seq += 1;
        self.queued[li] += 1;
        self.heap.push(Reverse(Pending { at, seq: self.seq, buf, len: n as u32, link: li as u32 }));
    }

    fn write_out(&mut self, li: usize, out: usize, buf: BufId, len: usize) {
        let c = &mut self.links[li].counters;
        match sys::write_fd(self.tuns[out].as_raw_fd(), &self.pool.buf(buf)[..len]) {
            Ok(_) => {
                c.delivered_pkts += 1;
                c.delivered_bytes += len as u64;
            }
            Err(_) => c.drop_other += 1,
        }
    }

    fn release_due(&mut self, now: u64) {
        while self.heap.peek().is_some_and(|Reverse(p)| p.at <= now) {
            let Some(Reverse(p)) = self.heap.pop() else { break };
            let li = p.link as usize;
            self.queued[li] -= 1;
            if self.links[li].is_up() {
                let (_, dst, path) = self.topo.link_of_index(li);
                let out = dst * self.topo.paths as usize + path as usize;
                self.write_out(li, out, p.buf, p.len as usize);
            } else {
                // the link failed while the packet was on the wire
                self.links[li].counters.drop_down += 1;
            }
            self.pool.put(p.buf);
        }
    }

    fn run_schedule(&mut self, now: u64) {
        while self.schedule.last().is_some_and(|e| e.at <= now) {
            let Some(e) = self.schedule.pop() else { break };
            self.set_links(&e.sel, e.up);
        }
    }

    /// Set every link matching `sel` up or down; returns how many matched.
    pub(crate) fn set_links(&mut self, sel: &LinkSel, up: bool) -> usize {
        let mut n = 0;
        for (i, l) in self.links.iter_mut().enumerate() {
            let (s, d, p) = self.topo.link_of_index(i);
            if s != d && sel.matches(s, d, p) {
                l.set_up(up);
                n += 1;
            }
        }
        n
    }

    fn next_deadline(&self) -> Option<u64> {
        let a = self.heap.peek().map(|Reverse(p)| p.at);
        let b = self.schedule.last().map(|e| e.at);
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    pub(crate) fn counters(&self) -> Counters {
        let mut global = self.global;
        global.pool_buffers = self.pool.buffers() as u64;
        let links = self
            .links
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let (src, dst, path) = self.topo.link_of_index(i);
                (src != dst).then_some(LinkReport { src, dst, path, up: l.is_up(), counters: l.counters })
            })
            .collect();
        Counters { global, links }
    }

    pub(crate) fn write_counters_file(&self) {
        let path = self.dir.join("counters.txt");
        if let Err(e) = std::fs::write(&path, self.counters().to_text()) {
            eprintln!("wanmpi-emu forwarder: writing {}: {e}", path.display());
        }
    }

    pub(crate) fn topology(&self) -> &Topology {
        &self.topo
    }
}
