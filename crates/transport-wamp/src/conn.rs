//! `Conn`: the protocol towards one peer, as a state machine that does no
//! I/O and never reads the clock (quinn-proto's shape). The transport feeds
//! it opened datagrams and the time, and pulls out datagrams to send and the
//! next time it wants to be woken.
//!
//! Call order: `on_datagram` for each arrival, `on_timeout` when `deadline`
//! passed, then `poll_transmit` until it returns false, then `pop_frame`
//! until None. `offer` queues a frame at any time.
//!
//! Reliability: every ack-eliciting packet is remembered until the peer's
//! bitmap ACK covers it or it is declared lost; lost packets' chunks are sent
//! again in new packets. A packet is lost when three later ones were
//! acknowledged (one, in paper mode: "resend what the bitmap lacks") or
//! when a later one was acknowledged 9/8 of a round trip after it was sent
//! (RACK). A probe timeout resends the oldest outstanding chunk, so a lost
//! last packet costs about one round trip and a bit, not a retransmission
//! timeout.

use crate::ackgen::{RecvPns, Refused, MAX_AHEAD};
use crate::fec::{FecRecv, FecSend};
use crate::options::Fec;
use crate::packet::{self, parse_payload, Ack, Chunk, DATA_HEADER_LEN, FLOOR_LEN};
use crate::rate::{Acked, Mode, Pacer, Rate, Sample};
use crate::reasm::{Reasm, Refusal};
use crate::rtt::Rtt;
use crate::sendbuf::{ChunkRef, SendBuf};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Packets per window of the loss meter.
const LOSS_WINDOW: u64 = 256;

#[derive(Debug, Clone)]
pub struct ConnConfig {
    pub mode: Mode,
    pub channels: u16,
    /// Plaintext bytes per datagram: floor and chunks (no header, no tag).
    pub max_payload: usize,
    pub max_frame: usize,
    /// Receive buffer granted to the peer.
    pub window: u64,
    /// Bytes `offer` queues before it says "would block".
    pub send_queue: usize,
    pub ack_every: u32,
    pub ack_delay: Duration,
    pub ack_freq: f64,
    pub xmt_timeout: Duration,
    pub initial_rtt: Duration,
    pub initial_window: u32,
    pub keepalive: Duration,
    pub peer_timeout: Duration,
    pub fec: Fec,
}

impl ConnConfig {
    /// Plaintext bytes of a packet that carries data: with repair packets
    /// possible, room is left so that one packet fits a repair's shard.
    pub fn source_payload(&self) -> usize {
        match self.fec {
            Fec::Off => self.max_payload,
            _ => self.max_payload - crate::fec::SHARD_OVERHEAD,
        }
    }

    /// DATA bytes per chunk: a whole packet less the floor and one header.
    pub fn chunk(&self) -> u16 {
        (self.source_payload() - FLOOR_LEN - DATA_HEADER_LEN).min(u16::MAX as usize) as u16
    }
}

/// Why an authenticated datagram was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Dropped {
    Duplicate,
    TooFar,
    Malformed(String),
    NoRoom,
}

struct Sent {
    time: Instant,
    size: u32,
    chunks: Vec<ChunkRef>,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
    close: bool,
}

/// Counters of one connection.
#[derive(Debug, Default, Clone)]
pub struct ConnStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub bytes_sent: u64,
    pub data_chunks_sent: u64,
    pub chunks_resent: u64,
    pub packets_lost: u64,
    pub probes: u64,
    /// Packets refused by number: seen before, below the floor, or too far ahead.
    pub duplicates: u64,
    pub refused_no_room: u64,
    pub malformed: u64,
    pub repairs_sent: u64,
    pub recovered: u64,
    pub frames_delivered: u64,
}

pub struct Conn {
    cfg: ConnConfig,
    send: SendBuf,
    /// Ack-eliciting packets not yet resolved; `sent[i]` is packet sent_base + i.
    sent: VecDeque<Option<Sent>>,
    sent_base: u64,
    next_pn: u64,
    in_flight: u64,
    largest_acked: Option<u64>,
    rtt: Rtt,
    rate: Rate,
    /// Losses of packets numbered below this were sent before the rate
    /// model's last reaction and do not feed it again.
    loss_epoch: u64,
    pacer: Pacer,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited_until: u64,
    round: u64,
    next_round_delivered: u64,
    /// Ack train: start time and delivered count at its first ACK.
    train: Option<(Instant, u64)>,
    last_ack_time: Option<Instant>,
    loss_time: Option<Instant>,
    pto_count: u32,
    last_eliciting_sent: Option<Instant>,
    probes_due: u32,
    ping_due: bool,
    recv: RecvPns,
    reasm: Reasm,
    peer_credit: u64,
    credit_sent: u64,
    fec_send: FecSend,
    fec_recv: FecRecv,
    /// Loss estimate for FEC and the adaptive choice (`note_resolved`).
    loss_rate: f64,
    /// Packets resolved and lost in the loss meter's current window.
    win_resolved: u64,
    win_lost: u64,
    last_heard: Instant,
    lost: Option<String>,
    close_queued: bool,
    close_acked: bool,
    peer_closed: bool,
    pub stats: ConnStats,
}

impl Conn {
    pub fn new(cfg: ConnConfig, now: Instant) -> Conn {
        let chunk = cfg.chunk();
        let mss = cfg.max_payload;
        let rate = Rate::new(cfg.mode, mss, cfg.initial_rtt, cfg.initial_window as u64 * mss as u64, cfg.ack_delay);
        let ack_every = if cfg.mode == Mode::Paper { u32::MAX } else { cfg.ack_every };
        Conn {
            send: SendBuf::new(cfg.channels, chunk),
            sent: VecDeque::new(),
            sent_base: 0,
            next_pn: 0,
            in_flight: 0,
            largest_acked: None,
            rtt: Rtt::new(cfg.initial_rtt),
            rate,
            loss_epoch: 0,
            pacer: Pacer::new(),
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            app_limited_until: 0,
            round: 0,
            next_round_delivered: 0,
            train: None,
            last_ack_time: None,
            loss_time: None,
            pto_count: 0,
            last_eliciting_sent: None,
            probes_due: 0,
            ping_due: false,
            recv: RecvPns::new(ack_every, cfg.ack_delay),
            reasm: Reasm::new(cfg.channels, cfg.max_frame, cfg.window),
            peer_credit: cfg.window,
            credit_sent: cfg.window,
            fec_send: FecSend::new(cfg.fec, mss),
            fec_recv: FecRecv::new(),
            loss_rate: 0.0,
            win_resolved: 0,
            win_lost: 0,
            last_heard: now,
            lost: None,
            close_queued: false,
            close_acked: false,
            peer_closed: false,
            stats: ConnStats::default(),
            cfg,
        }
    }

    pub fn rtt(&self) -> &Rtt {
        &self.rtt
    }

    pub fn bandwidth(&self) -> f64 {
        self.rate.bandwidth()
    }

    pub fn phase(&self) -> &'static str {
        self.rate.phase_name()
    }

    /// One line of the sender's state, for WANMPI_WAMP_TRACE.
    pub fn trace_line(&self) -> String {
        format!(
            "bw {:.2} MB/s pacing {:.2} MB/s cwnd {} in_flight {} unsent {} credit_left {} srtt {:.1} ms phase {} lost {} loss {:.3}",
            self.rate.bandwidth() / 1e6,
            self.rate.pacing_rate().unwrap_or(0.0) / 1e6,
            self.rate.cwnd(),
            self.in_flight,
            self.send.unsent_bytes(),
            self.peer_credit.saturating_sub(self.send.admitted()),
            self.rtt.srtt.as_secs_f64() * 1e3,
            self.rate.phase_name(),
            self.stats.packets_lost,
            self.loss_rate
        )
    }

    pub fn loss_rate(&self) -> f64 {
        self.loss_rate
    }

    pub fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// Stops the connection for good (the peer's process is known dead).
    pub fn abandon(&mut self, reason: &str) {
        self.lost.get_or_insert_with(|| reason.to_string());
    }

    /// The peer was heard from and answered at least one of our probes.
    pub fn established(&self) -> bool {
        self.largest_acked.is_some()
    }

    /// Everything we offered was acknowledged.
    pub fn all_acked(&self) -> bool {
        self.send.all_acked()
    }

    /// Our CLOSE was acknowledged and the peer's CLOSE arrived.
    pub fn closed(&self) -> bool {
        self.close_acked && self.peer_closed
    }

    /// Bytes near enough the end of what the sender holds that a loss
    /// among them would delay the last frame's delivery: about a round
    /// trip's worth (a loss is found about a round trip after its send and
    /// its resend arrives half a round trip later, as the last packet
    /// does), with 1/8 to spare. Forward error correction protects only
    /// these.
    fn tail_bytes(&self) -> u64 {
        let rtt = self.rtt.srtt.max(self.rtt.min);
        ((self.rate.bandwidth() * rtt.as_secs_f64() * 1.125) as u64).max(64 << 10)
    }

    fn in_tail(&self) -> bool {
        self.send.unsent_bytes() as u64 <= self.tail_bytes()
    }

    /// Bytes `offer` queues: the configured bound, or twice the tail when
    /// that is more, within four times the bound (else a long path's whole
    /// queue would count as its tail).
    fn send_queue(&self) -> usize {
        let tail = self.tail_bytes().min(usize::MAX as u64 / 4) as usize;
        (2 * tail).clamp(self.cfg.send_queue, 4 * self.cfg.send_queue)
    }

    /// Queues a frame; false when the send queue is full (try later).
    pub fn offer(&mut self, channel: u16, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if self.send.unsent_bytes() > 0 && self.send.unsent_bytes() + len > self.send_queue() {
            return false;
        }
        self.send.offer(channel, parts);
        true
    }

    /// Asks for an ACK from the peer (setup's handshake, keepalives).
    pub fn ping(&mut self) {
        self.ping_due = true;
    }

    /// Queues our CLOSE once every frame is acknowledged.
    pub fn close(&mut self) {
        self.close_queued = true;
    }

    pub fn next_pn(&self) -> u64 {
        self.next_pn
    }

    /// Takes one opened datagram: `payload` is its plaintext (floor and chunks).
    pub fn on_datagram(&mut self, now: Instant, pn: u64, payload: &[u8]) -> Result<(), Dropped> {
        self.take_packet(now, pn, payload)?;
        // Packets that the repair packets among these rebuilt.
        while let Some((rpn, rp)) = self.fec_recv.recovered() {
            if self.take_packet(now, rpn, &rp).is_ok() {
                self.stats.recovered += 1;
            }
        }
        Ok(())
    }

    fn take_packet(&mut self, now: Instant, pn: u64, payload: &[u8]) -> Result<(), Dropped> {
        match self.recv.check(pn) {
            Err(Refused::Duplicate) => {
                self.stats.duplicates += 1;
                return Err(Dropped::Duplicate);
            }
            Err(Refused::TooFar) => {
                self.stats.duplicates += 1;
                return Err(Dropped::TooFar);
            }
            Ok(()) => {}
        }
        let malformed = |e: String| Dropped::Malformed(e);
        let (floor, chunks) = parse_payload(payload).map_err(|e| malformed(e.to_string()))?;
        if floor > pn {
            self.stats.malformed += 1;
            return Err(malformed("floor above the packet's own number".into()));
        }
        let chunks: Vec<Chunk<'_>> = chunks.collect::<Result<_, _>>().map_err(|e| {
            self.stats.malformed += 1;
            malformed(e.to_string())
        })?;
        // Check everything before changing anything: a packet is taken whole
        // or not at all (then it is not acknowledged and will come again).
        let data = chunks.iter().filter_map(|c| match c {
            Chunk::Data(d) => Some(d),
            _ => None,
        });
        let new_bytes = match self.reasm.check_packet(data) {
            Ok(n) => n,
            Err(Refusal::Bad(why)) => {
                self.stats.malformed += 1;
                return Err(malformed(why.into()));
            }
            Err(Refusal::NoRoom) => unreachable!("check does not weigh room"),
        };
        for c in &chunks {
            if let Chunk::Ack(a) = c {
                if a.largest().is_some_and(|l| l >= self.next_pn) {
                    self.stats.malformed += 1;
                    return Err(malformed("ACK of a packet never sent".into()));
                }
            }
        }
        if !self.reasm.has_room(new_bytes) {
            self.stats.refused_no_room += 1;
            return Err(Dropped::NoRoom);
        }
        let eliciting = chunks.iter().any(|c| c.ack_eliciting());
        self.recv.record(now, pn, eliciting);
        self.recv.set_floor(floor);
        self.last_heard = now;
        self.stats.packets_received += 1;
        let is_repair = chunks.iter().any(|c| matches!(c, Chunk::Repair(_)));
        if !is_repair {
            self.fec_recv.source(pn, payload);
        }
        for c in chunks {
            match c {
                Chunk::Data(d) => {
                    self.reasm.place(&d);
                    if self.cfg.mode == Mode::Paper {
                        self.paper_ack_cycle(d.channel, d.seq);
                    }
                }
                Chunk::Ack(a) => self.on_ack(now, &a),
                // A ping asks for an answer now (handshake, probes, keepalives).
                Chunk::Ping => self.recv.request_ack(),
                Chunk::Close => self.peer_closed = true,
                Chunk::Repair(r) => self.fec_recv.repair(&r),
            }
        }
        Ok(())
    }

    /// The paper's receiver: an ACK each time another ACK_FREQ fraction of
    /// a frame arrived, and when the frame is complete.
    fn paper_ack_cycle(&mut self, channel: u16, seq: u32) {
        match self.reasm.progress(channel, seq) {
            None => self.recv.request_ack(), // completed
            Some((got, n)) => {
                let step = ((self.cfg.ack_freq * n as f64).ceil() as u32).max(1);
                if got % step == 0 {
                    self.recv.request_ack();
                }
            }
        }
    }

    fn on_ack(&mut self, now: Instant, a: &Ack<'_>) {
        self.peer_credit = self.peer_credit.max(a.max_data);
        let Some(largest) = a.largest() else { return };
        let mut newly_largest = None;
        let mut acked_bytes = 0;
        let mut sample = None;
        let mut new_round = false;
        let mut acked_packets = 0;
        let end = largest.saturating_sub(self.sent_base).saturating_add(1).min(self.sent.len() as u64) as usize;
        for i in 0..end {
            let pn = self.sent_base + i as u64;
            if self.sent[i].is_none() || !a.covers(pn) {
                continue;
            }
            let s = self.sent[i].take().expect("checked");
            self.in_flight -= s.size as u64;
            acked_bytes += s.size as u64;
            for &r in &s.chunks {
                self.send.ack(r);
            }
            if s.close {
                self.close_acked = true;
            }
            let (rs, began) = self.on_delivered(now, &s);
            sample = Some(rs);
            new_round |= began;
            newly_largest = Some((pn, s.time));
            acked_packets += 1;
        }
        if acked_packets > 0 {
            self.note_resolved(acked_packets, 0);
        }
        if self.largest_acked.is_none_or(|l| largest > l) {
            self.largest_acked = Some(largest);
        }
        let Some((pn, sent_at)) = newly_largest else { return };
        let mut rtt = None;
        if pn == largest {
            let r = now.saturating_duration_since(sent_at);
            self.rtt.sample(r, Duration::from_micros(a.delay_us as u64));
            rtt = Some(r);
        }
        self.pto_count = 0;
        let train = self.train_sample(now);
        let rs = sample.map(|s| match train {
            Some(t) if t > s.rate => Sample { rate: t, app_limited: true },
            _ => s,
        });
        let acked = Acked { bytes: acked_bytes, sample: rs, min_rtt: self.rtt.min, round: self.round, new_round, inflight: self.in_flight, rtt };
        self.rate.on_ack(now, acked);
        if self.rate.take_reaction() {
            self.loss_epoch = self.next_pn;
        }
        self.detect_lost(now);
        self.trim_sent();
    }

    /// Delivery-rate bookkeeping for one acknowledged packet; returns its
    /// rate sample and whether a new round trip began.
    fn on_delivered(&mut self, now: Instant, s: &Sent) -> (Sample, bool) {
        self.delivered += s.size as u64;
        self.delivered_time = now;
        let mut new_round = false;
        if s.delivered >= self.next_round_delivered {
            self.next_round_delivered = self.delivered;
            self.round += 1;
            new_round = true;
        }
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        self.first_sent_time = s.time;
        let send_elapsed = s.time.saturating_duration_since(s.first_sent_time);
        let ack_elapsed = now.saturating_duration_since(s.delivered_time);
        let interval = send_elapsed.max(ack_elapsed).max(Duration::from_micros(1));
        let rate = (self.delivered - s.delivered) as f64 / interval.as_secs_f64();
        (Sample { rate, app_limited: s.app_limited }, new_round)
    }

    /// Rate at which ACKs of one burst come back: what the path delivers
    /// even when a burst is shorter than a round trip (ping-pong), where
    /// the per-packet sample only sees burst/RTT. Never above what we paced.
    fn train_sample(&mut self, now: Instant) -> Option<f64> {
        let gap = self.last_ack_time.map(|t| now.saturating_duration_since(t));
        self.last_ack_time = Some(now);
        if gap.is_none_or(|g| g > self.rtt.min / 2) {
            self.train = Some((now, self.delivered));
            return None;
        }
        let (t0, d0) = self.train?;
        let dt = now.saturating_duration_since(t0);
        let bytes = self.delivered - d0;
        if dt < Duration::from_micros(500) || bytes < 4 * self.cfg.max_payload as u64 {
            return None;
        }
        let rate = bytes as f64 / dt.as_secs_f64();
        Some(self.rate.pacing_rate().map_or(rate, |p| rate.min(p)))
    }

    fn detect_lost(&mut self, now: Instant) {
        self.loss_time = None;
        let Some(largest) = self.largest_acked else { return };
        let threshold = if self.cfg.mode == Mode::Paper { 1 } else { 3 };
        let delay = self.rtt.loss_delay();
        let mut lost_bytes = 0;
        let mut lost_packets = 0;
        let mut lost_in_epoch = 0;
        for i in 0..self.sent.len() {
            let pn = self.sent_base + i as u64;
            if pn >= largest {
                break;
            }
            let Some(s) = &self.sent[i] else { continue };
            if largest - pn >= threshold || now >= s.time + delay {
                let s = self.sent[i].take().expect("checked");
                self.in_flight -= s.size as u64;
                if pn >= self.loss_epoch {
                    lost_bytes += s.size as u64;
                    lost_in_epoch += 1;
                }
                lost_packets += 1;
                for &r in &s.chunks {
                    self.send.lost(r);
                    self.stats.chunks_resent += 1;
                }
                if s.close {
                    self.close_queued = true;
                }
            } else {
                let t = s.time + delay;
                self.loss_time = Some(self.loss_time.map_or(t, |l| l.min(t)));
            }
        }
        if lost_packets > 0 {
            self.stats.packets_lost += lost_packets;
            self.rate.on_loss(lost_bytes);
            self.note_resolved(lost_in_epoch, lost_in_epoch);
        }
    }

    /// Loss rate of our packets, for sizing repairs and for the adaptive
    /// choice: lost over resolved (acknowledged or lost) packets, in windows
    /// of `LOSS_WINDOW`, rising at once to a higher rate once a quarter
    /// window is in and decaying slowly (a quiet spell should not switch
    /// repairs off). Losses of packets sent before the rate model's last
    /// reaction are left out: startup's overshoot is congestion, not the
    /// path's random loss. (Counting losses against packets *sent* in the
    /// window read 100 % at the end of a burst, when few are sent and the
    /// last round trip's losses come in.)
    fn note_resolved(&mut self, resolved: u64, lost: u64) {
        self.win_resolved += resolved;
        self.win_lost += lost;
        if self.win_resolved >= LOSS_WINDOW {
            let rate = self.win_lost as f64 / self.win_resolved as f64;
            self.loss_rate = if rate >= self.loss_rate { rate } else { 0.875 * self.loss_rate + 0.125 * rate };
            self.win_resolved = 0;
            self.win_lost = 0;
        } else if self.win_resolved >= LOSS_WINDOW / 4 {
            self.loss_rate = self.loss_rate.max(self.win_lost as f64 / self.win_resolved as f64);
        }
        self.fec_send.set_loss(self.loss_rate);
    }

    fn trim_sent(&mut self) {
        while self.sent.front().is_some_and(|s| s.is_none()) {
            self.sent.pop_front();
            self.sent_base += 1;
        }
    }

    fn floor(&self) -> u64 {
        self.sent_base.min(self.next_pn)
    }

    fn pto_deadline(&self) -> Option<Instant> {
        let last = self.last_eliciting_sent?;
        if self.in_flight == 0 {
            return None;
        }
        let base = match self.cfg.mode {
            Mode::Paper => return Some(last + self.cfg.xmt_timeout),
            Mode::Model => self.rtt.pto(self.cfg.ack_delay),
        };
        // Backs off at most 8x and to at most a second (the outage probe
        // cap): a probe is two packets, cheap for the path, and with large
        // datagrams (IP fragments) on a lossy path several probes in a row
        // may be lost; uncapped back-off stalled 30 s, and after an outage
        // the job resumes at the first probe that gets through.
        let backed = base * 2u32.pow(self.pto_count.min(3));
        Some(last + backed.min(base.max(wanmpi_transport::outage::PROBE_CAP)))
    }

    /// The sender has data but the peer's credit holds it back.
    fn credit_blocked(&mut self) -> bool {
        !self.send.nothing_to_send() && self.send.peek(self.peer_credit).is_none()
    }

    /// When `on_timeout` (or `poll_transmit`, for pacing) should run next.
    pub fn deadline(&mut self, now: Instant) -> Option<Instant> {
        let mut d: Option<Instant> = None;
        let mut take = |t: Option<Instant>| {
            if let Some(t) = t {
                d = Some(d.map_or(t, |x| x.min(t)));
            }
        };
        take(self.recv.deadline());
        take(self.loss_time);
        take(self.pto_deadline());
        take(self.fec_send.deadline());
        take(self.pacing_deadline(now));
        if self.lost.is_none() && self.established() {
            take(Some(self.last_heard + self.cfg.peer_timeout));
            take(Some(self.last_eliciting_sent.unwrap_or(self.last_heard).max(self.last_heard) + self.cfg.keepalive));
        }
        if self.in_flight == 0 && self.credit_blocked() {
            take(Some(self.last_eliciting_sent.unwrap_or(self.last_heard) + self.rtt.pto(self.cfg.ack_delay)));
        }
        d
    }

    pub fn on_timeout(&mut self, now: Instant) {
        if self.loss_time.is_some_and(|t| now >= t) {
            self.detect_lost(now);
            self.trim_sent();
        }
        if self.pto_deadline().is_some_and(|t| now >= t) {
            self.on_pto();
        }
        self.fec_send.on_timeout(now);
        // Before the handshake completes, setup's own timeout governs.
        if self.lost.is_none() && self.established() && now >= self.last_heard + self.cfg.peer_timeout && self.expects_answer() {
            let silent = now.saturating_duration_since(self.last_heard);
            self.lost = Some(format!(
                "no answer for {}: the path was silent past the outage limit ({}; mpirun --outage-limit, WANMPI_OUTAGE_LIMIT)",
                wanmpi_transport::outage::describe(silent),
                wanmpi_transport::outage::describe(self.cfg.peer_timeout)
            ));
        }
        let quiet_since = self.last_eliciting_sent.unwrap_or(self.last_heard).max(self.last_heard);
        if now >= quiet_since + self.cfg.keepalive {
            self.ping_due = true;
        }
        if self.in_flight == 0
            && self.credit_blocked()
            && now >= self.last_eliciting_sent.unwrap_or(self.last_heard) + self.rtt.pto(self.cfg.ack_delay)
        {
            self.ping_due = true;
        }
    }

    /// We sent something the peer should have answered since we last heard it.
    fn expects_answer(&self) -> bool {
        self.last_eliciting_sent.is_some_and(|t| t > self.last_heard) || self.in_flight > 0
    }

    fn on_pto(&mut self) {
        self.stats.probes += 1;
        if self.cfg.mode == Mode::Model {
            self.pto_count += 1;
        }
        // Resend the oldest outstanding chunks first, without declaring loss.
        let mut queued = 0;
        for s in self.sent.iter().flatten() {
            for &r in s.chunks.iter().rev() {
                self.send.probe(r);
                queued += 1;
            }
            if queued >= 2 {
                break;
            }
        }
        if queued == 0 {
            self.ping_due = true;
        }
        self.probes_due = 2;
        // The timer restarts from now.
        self.last_eliciting_sent = None;
    }

    fn can_send_data(&mut self, now: Instant) -> bool {
        if self.send.peek(self.peer_credit).is_none() {
            return false;
        }
        if self.probes_due > 0 {
            return true;
        }
        if self.in_flight + self.cfg.max_payload as u64 > self.rate.cwnd() {
            return false;
        }
        if self.sent_base + MAX_AHEAD / 2 <= self.next_pn {
            return false;
        }
        self.pacer.next_send(now, self.rate.pacing_rate(), self.cfg.max_payload) <= now
    }

    /// When pacing will let the next data or repair packet go, if pacing
    /// is what holds it.
    fn pacing_deadline(&mut self, now: Instant) -> Option<Instant> {
        let data_held = self.send.peek(self.peer_credit).is_some() && self.in_flight + self.cfg.max_payload as u64 <= self.rate.cwnd();
        if !data_held && !self.fec_send.has_pending() {
            return None;
        }
        let t = self.pacer.next_send(now, self.rate.pacing_rate(), self.cfg.max_payload);
        (t > now).then_some(t)
    }

    /// Writes the next datagram's plaintext payload (floor, chunks) after
    /// what `out` holds; false when there is nothing to send now.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        if self.lost.is_some() {
            return false;
        }
        let start = out.len();
        // Repairs are paced as data is: sent at once they overfilled a
        // bottleneck's queue by their share of the bytes.
        let paced = |c: &mut Self| c.pacer.next_send(now, c.rate.pacing_rate(), c.cfg.max_payload) <= now;
        if self.fec_send.has_pending() && paced(self) {
            let shard = self.fec_send.poll_repair().expect("pending");
            out.extend_from_slice(&self.floor().to_be_bytes());
            packet::emit_repair(out, shard.first, shard.k, shard.m, shard.index, &shard.bytes);
            self.finish_unreliable(start, out);
            self.pacer.on_send(out.len() - start);
            self.stats.repairs_sent += 1;
            return true;
        }
        let my_credit = self.reasm.delivered() + self.cfg.window;
        let credit_news = my_credit >= self.credit_sent + self.cfg.window / 4;
        let ack_due = self.recv.due(now) || credit_news;
        let data = self.can_send_data(now);
        let close_now = self.close_queued && self.send.all_acked();
        if !(data || ack_due || self.ping_due || close_now) {
            return false;
        }
        out.extend_from_slice(&self.floor().to_be_bytes());
        let room = self.cfg.source_payload();
        let next_len = if data { self.send.peek(self.peer_credit).map_or(0, |n| n + DATA_HEADER_LEN) } else { 0 };
        let piggyback = self.recv.has_news() && FLOOR_LEN + self.recv.ack_len() + next_len <= room;
        if ack_due || piggyback || (self.recv.has_news() && !data) {
            self.recv.write_ack(out, now, my_credit);
            self.credit_sent = my_credit;
        }
        let mut chunks = vec![];
        if data {
            while let Some(n) = self.send.peek(self.peer_credit) {
                if out.len() - start + DATA_HEADER_LEN + n > room {
                    break;
                }
                let p = self.send.take().expect("peeked");
                packet::emit_data_header(out, p.channel, p.seq, p.frame_len, p.r.index, p.chunk);
                out.extend_from_slice(p.bytes);
                chunks.push(p.r);
            }
        }
        let mut close = false;
        if close_now {
            packet::emit_close(out);
            self.close_queued = false;
            close = true;
        }
        if self.ping_due && chunks.is_empty() && !close {
            packet::emit_ping(out);
        }
        let eliciting = !chunks.is_empty() || close || self.ping_due;
        self.ping_due = false;
        let size = (out.len() - start) as u32;
        self.stats.data_chunks_sent += chunks.len() as u64;
        if eliciting {
            if self.in_flight == 0 {
                self.first_sent_time = now;
                self.delivered_time = now;
            }
            if self.send.nothing_to_send() && self.in_flight + (size as u64) < self.rate.cwnd() {
                self.app_limited_until = (self.delivered + self.in_flight + size as u64).max(1);
            }
            let s = Sent {
                time: now,
                size,
                chunks,
                delivered: self.delivered,
                delivered_time: self.delivered_time,
                first_sent_time: self.first_sent_time,
                app_limited: self.app_limited_until != 0,
                close,
            };
            while self.sent_base + (self.sent.len() as u64) < self.next_pn {
                self.sent.push_back(None);
            }
            self.sent.push_back(Some(s));
            self.in_flight += size as u64;
            self.last_eliciting_sent = Some(now);
            self.pacer.on_send(size as usize);
            self.probes_due = self.probes_due.saturating_sub(1);
        }
        let tail = self.in_tail();
        self.fec_send.set_rate(self.rate.bandwidth() / self.cfg.max_payload as f64);
        self.fec_send.source(now, self.next_pn, &out[start..], eliciting, self.send.nothing_to_send(), tail);
        self.next_pn += 1;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size as u64;
        true
    }

    /// A packet nobody resends (repair): numbered, not tracked.
    fn finish_unreliable(&mut self, start: usize, out: &[u8]) {
        self.next_pn += 1;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += (out.len() - start) as u64;
    }

    /// A buffer `pop_frame` gave out, back for reuse.
    pub fn recycle(&mut self, b: Vec<u8>) {
        self.reasm.recycle(b);
    }

    /// The next frame for the engine.
    pub fn pop_frame(&mut self) -> Option<(u16, Vec<u8>)> {
        let f = self.reasm.pop()?;
        self.stats.frames_delivered += 1;
        Some(f)
    }

    /// Something waits to be sent or acknowledged.
    pub fn busy(&self) -> bool {
        !self.send.all_acked() || self.close_queued
    }
}
