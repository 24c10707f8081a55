//! Watching a running job: decide when it failed, end the ranks that are
//! left, collect how each ended.

use super::Event;
use crate::output::Lost;
use crate::process::{self, decode, signal_name};
use crate::spec::{JobOutcome, JobSpec, RankEnd, RankResult};
use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::ServerEvent;

/// How often the watcher looks at the cancel flag and the clock.
const TICK: Duration = Duration::from_millis(100);
/// How long a report that may be explained by a rank's death (a lost peer,
/// an exit without finalize) waits for that death to show up.
const SETTLE: Duration = Duration::from_millis(1000);
/// How long to wait for output after the last rank ended.
const DRAIN: Duration = Duration::from_secs(2);

pub struct Rank {
    pub host: String,
    pub pid: u32,
    end: Option<RankEnd>,
    connected: bool,
    finalized: bool,
    open_streams: u8,
}

impl Rank {
    pub fn new(host: String, pid: u32) -> Rank {
        Rank { host, pid, end: None, connected: false, finalized: false, open_streams: 2 }
    }
}

struct Failure {
    text: String,
    code: i32,
}

pub struct Watch<'a> {
    spec: &'a JobSpec,
    ranks: Vec<Rank>,
    rx: Receiver<Event>,
    messages: Vec<String>,
    failure: Option<Failure>,
    /// A failure that stands only if nothing explains it within SETTLE.
    pending: Option<(Instant, Failure)>,
    /// With `tolerate_rank_failure`: rank failures that did not end the job,
    /// in the order they happened.
    tolerated: Vec<(u32, Result<i32, i32>)>,
    /// Output that could not be written.
    lost: Arc<Lost>,
    /// Jobs the ranks spawned.
    pub children: super::spawn::Children,
    /// Tells the surviving ranks of a death (through the key/value service).
    pub deaths: Option<wanmpi_bootstrap::Deaths>,
}

impl<'a> Watch<'a> {
    pub fn new(spec: &'a JobSpec, ranks: Vec<Rank>, rx: Receiver<Event>, lost: Arc<Lost>) -> Watch<'a> {
        Watch {
            spec,
            ranks,
            rx,
            messages: Vec::new(),
            failure: None,
            pending: None,
            tolerated: Vec::new(),
            lost,
            children: Default::default(),
            deaths: None,
        }
    }

    fn say(&mut self, msg: String) {
        // A program that captures the output reads the messages from the outcome.
        // Not eprintln!, which panics when stderr cannot be written.
        if self.spec.output == crate::spec::OutputMode::Forward {
            let _ = writeln!(std::io::stderr(), "mpirun: {msg}");
        }
        self.messages.push(msg);
    }

    fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.end.is_none()).count()
    }

    fn describe(&self, rank: u32) -> String {
        match self.ranks.get(rank as usize) {
            Some(r) => format!("rank {rank} (pid {} on {})", r.pid, r.host),
            None => format!("rank {rank}"),
        }
    }

    fn fail(&mut self, f: Failure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
    }

    pub fn run(&mut self) -> JobOutcome {
        let started = Instant::now();
        let deadline = self.spec.timeout.map(|t| started + t);
        while self.running() > 0 && self.failure.is_none() {
            match self.rx.recv_timeout(TICK) {
                Ok(ev) => self.handle(ev, true),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if let Some(news) = self.lost.news() {
                self.say(news);
            }
            let now = Instant::now();
            if let Some(sig) = self.spec.cancel.as_ref().map(|c| c.load(std::sync::atomic::Ordering::SeqCst)).filter(|s| *s != 0) {
                let name = i32::try_from(sig).map(signal_name).unwrap_or("a signal");
                self.fail(Failure { text: format!("mpirun received {name}"), code: 128 + i32::try_from(sig).unwrap_or(0) });
            }
            if let (Some(d), Some(t)) = (deadline, self.spec.timeout) {
                if now >= d {
                    self.fail(Failure { text: format!("the job ran longer than its timeout of {} s", t.as_secs_f64()), code: 124 });
                }
            }
            if matches!(&self.pending, Some((at, _)) if now >= *at) {
                if let Some((_, f)) = self.pending.take() {
                    self.fail(f);
                }
            }
        }
        if let Some((_, f)) = self.pending.take() {
            if self.failure.is_none() {
                self.say(format!("warning: {}", f.text));
            }
        }
        let failed = self.failure.take().or_else(|| self.survivors_verdict());
        if let Some(f) = &failed {
            let tail = if self.running() > 0 { "; ending the job" } else { "" };
            self.say(format!("{}{tail}", f.text));
            self.children.cancel();
            self.end_remaining();
        }
        self.drain_output();
        let mut exit_code = failed.as_ref().map(|f| f.code).unwrap_or(0);
        let mut failure = failed.map(|f| f.text);
        // The job's output is part of its result: losing it fails the job.
        if let Some(lost) = self.lost.summary() {
            self.say(lost.clone());
            if exit_code == 0 {
                exit_code = 1;
                failure = Some(lost);
            }
        }
        JobOutcome {
            exit_code,
            failure,
            ranks: self
                .ranks
                .iter()
                .enumerate()
                .map(|(i, r)| RankResult {
                    rank: i as u32,
                    host: r.host.clone(),
                    pid: r.pid,
                    end: r.end.clone().unwrap_or(RankEnd::Unknown),
                    connected: r.connected,
                    finalized: r.finalized,
                })
                .collect(),
            messages: std::mem::take(&mut self.messages),
            output: Vec::new(),
            job_id: String::new(),
        }
    }

    /// After the key/value service stopped: the count of refused
    /// connections it had not reported one by one goes into the outcome.
    pub fn after_service(&mut self, outcome: &mut JobOutcome) {
        let late: Vec<ServerEvent> = self.rx.try_iter().filter_map(|e| if let Event::Kv(k) = e { Some(k) } else { None }).collect();
        for ev in late {
            if let ServerEvent::Refused { .. } | ServerEvent::RefusedMore { .. } = ev {
                self.handle_kv(ev, false);
            }
        }
        outcome.messages.append(&mut self.messages);
    }

    /// Updates state; when `judge`, also decides whether the job failed.
    fn handle(&mut self, ev: Event, judge: bool) {
        match ev {
            Event::Exited { rank, status } => {
                let Some(r) = self.ranks.get_mut(rank as usize) else { return };
                let decoded = decode(status);
                r.end = Some(match decoded {
                    Ok(c) => RankEnd::Exited(c),
                    Err(s) => RankEnd::Signaled(s),
                });
                let unfinished = r.connected && !r.finalized;
                // The survivors hear at once, whatever the network between
                // them does (a silent WAN path would tell them only at the
                // transport's outage limit); a rank that finalized is not a
                // failure.
                if !r.finalized {
                    if let (Some(d), Some(text)) = (&self.deaths, self.death_text(rank, decoded)) {
                        d.died(rank, &text);
                    }
                }
                if judge {
                    self.judge_exit(rank, decoded, unfinished);
                }
            }
            Event::OutputClosed { rank } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.open_streams = r.open_streams.saturating_sub(1);
                }
            }
            Event::Kv(k) => self.handle_kv(k, judge),
        }
    }

    fn judge_exit(&mut self, rank: u32, decoded: Result<i32, i32>, unfinished: bool) {
        let who = self.describe(rank);
        if self.spec.tolerate_rank_failure {
            return self.tolerate_exit(rank, &who, decoded);
        }
        match decoded {
            Ok(0) if unfinished => {
                // If the others end cleanly right after, this was only a
                // program that skipped finalize at the very end.
                let f = Failure { text: format!("{who} exited with code 0 without finalizing MPI while other ranks were still running"), code: 1 };
                if self.running() > 0 && self.pending.is_none() {
                    self.pending = Some((Instant::now() + SETTLE, f));
                } else if self.running() == 0 {
                    self.say(format!("warning: {who} exited without finalizing MPI"));
                }
            }
            Ok(0) => {}
            Ok(code) => self.fail(Failure { text: format!("{who} exited with code {code}"), code }),
            Err(sig) => self.fail(Failure { text: format!("{who} was killed by signal {sig} ({})", signal_name(sig)), code: 128 + sig }),
        }
    }

    fn handle_kv(&mut self, ev: ServerEvent, judge: bool) {
        match ev {
            ServerEvent::Connected { rank } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.connected = true;
                }
            }
            ServerEvent::Finalized { rank } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.finalized = true;
                }
            }
            ServerEvent::Refused { peer, reason } => {
                self.say(format!("refused a connection to the key/value service from {peer}: {reason}"));
            }
            ServerEvent::RefusedMore { count } => {
                self.say(format!(
                    "refused {count} more connections to the key/value service that did not prove the job secret (not logged one by one)"
                ));
            }
            ServerEvent::FenceTimeout { rank, missing } => {
                let m: Vec<String> = missing.iter().map(|r| r.to_string()).collect();
                self.say(format!("rank {rank} gave up waiting at a fence; ranks not there: {}", m.join(",")));
            }
            ServerEvent::Abort { rank, code, message } if judge => {
                let code = match code {
                    0..=255 => code,
                    _ => 1,
                };
                let text = format!("{} called abort with code {code}: {message}", self.describe(rank));
                self.fail(Failure { text, code });
            }
            ServerEvent::PeerLost { .. } if self.spec.tolerate_rank_failure => {}
            ServerEvent::PeerLost { reporter, rank, reason } if judge => {
                if self.pending.is_none() {
                    let text = format!("{} lost contact with rank {rank}: {reason}", self.describe(reporter));
                    self.pending = Some((Instant::now() + SETTLE, Failure { text, code: 1 }));
                }
            }
            ServerEvent::Spawn { rank, request } => {
                let port = request.port.clone();
                let started = if judge { self.children.start(self.spec, rank, request) } else { Err("the job is ending".into()) };
                if let Err(why) = started {
                    self.say(format!("could not spawn for rank {rank}: {why}"));
                    if let Some(n) = &self.children.notes {
                        let _ = n.put(&wanmpi_bootstrap::failure_key(&port), &wanmpi_bootstrap::failure_note(&why));
                    }
                    let _ = wanmpi_bootstrap::port::report_failure(&port, &why, Duration::from_secs(5));
                }
            }
            ServerEvent::Abort { .. } | ServerEvent::PeerLost { .. } => {}
        }
    }

    /// What the survivors are told of a rank that ended before finalizing:
    /// "rank 3 on host h2 (pid 4711) was killed by signal 9 (SIGKILL)".
    fn death_text(&self, rank: u32, decoded: Result<i32, i32>) -> Option<String> {
        let r = self.ranks.get(rank as usize)?;
        let how = match decoded {
            Ok(0) => "exited with code 0 without finalizing MPI".to_string(),
            Ok(code) => format!("exited with code {code}"),
            Err(sig) => format!("was killed by signal {sig} ({})", signal_name(sig)),
        };
        Some(format!("rank {rank} on host {} (pid {}) {how}", r.host, r.pid))
    }

    /// `--tolerate-rank-failure`: say what happened and let the others go on.
    fn tolerate_exit(&mut self, rank: u32, who: &str, decoded: Result<i32, i32>) {
        let what = match decoded {
            Ok(0) => return,
            Ok(code) => format!("exited with code {code}"),
            Err(sig) => format!("was killed by signal {sig} ({})", signal_name(sig)),
        };
        self.tolerated.push((rank, decoded));
        if self.running() > 0 {
            self.say(format!("{who} {what}; the other ranks go on (--tolerate-rank-failure)"));
        }
    }

    /// With tolerated failures, the job fails only if its survivors do:
    /// ranks killed by a signal are casualties; ranks that exited are
    /// survivors. Exit code: the first failing survivor's code; if every
    /// rank was killed, the first casualty's 128+signal; otherwise 0.
    fn survivors_verdict(&self) -> Option<Failure> {
        let first = self.tolerated.first()?;
        if let Some((rank, Ok(code))) = self.tolerated.iter().find(|(_, d)| d.is_ok()) {
            let text = format!("{} exited with code {code} (surviving a tolerated rank failure)", self.describe(*rank));
            return Some(Failure { text, code: *code });
        }
        let survivors = self.ranks.iter().filter(|r| matches!(r.end, Some(RankEnd::Exited(_)))).count();
        if survivors > 0 {
            return None;
        }
        let sig = first.1.err().unwrap_or(0);
        Some(Failure { text: format!("every rank failed; the first was {} (signal {sig})", self.describe(first.0)), code: 128 + sig })
    }

    /// Waits up to `limit` for events, until `done` holds.
    fn wait_until(&mut self, limit: Duration, done: impl Fn(&Self) -> bool) {
        let until = Instant::now() + limit;
        while !done(self) {
            let now = Instant::now();
            if now >= until {
                return;
            }
            match self.rx.recv_timeout(until - now) {
                Ok(ev) => self.handle(ev, false),
                Err(RecvTimeoutError::Timeout) => return,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// SIGTERM to every running rank's process group, SIGKILL after the grace.
    fn end_remaining(&mut self) {
        for r in self.ranks.iter().filter(|r| r.end.is_none()) {
            process::signal_group(r.pid, libc::SIGTERM);
        }
        self.wait_until(self.spec.grace, |w| w.running() == 0);
        let stubborn: Vec<u32> = self.ranks.iter().filter(|r| r.end.is_none()).map(|r| r.pid).collect();
        for pid in &stubborn {
            process::signal_group(*pid, libc::SIGKILL);
        }
        if !stubborn.is_empty() {
            self.wait_until(Duration::from_secs(5), |w| w.running() == 0);
        }
    }

    /// Lets forwarders pass on the last output; processes a rank left behind
    /// holding its output open are killed with their group.
    fn drain_output(&mut self) {
        let closed = |w: &Self| w.ranks.iter().all(|r| r.open_streams == 0);
        self.wait_until(DRAIN, closed);
        if !closed(self) {
            for r in self.ranks.iter().filter(|r| r.open_streams > 0) {
                process::signal_group(r.pid, libc::SIGKILL);
            }
            self.wait_until(Duration::from_secs(1), closed);
        }
    }
}
