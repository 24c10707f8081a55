use super::*;
use crate::request::RequestId;

fn env(ctx: u32, tag: i32, seq: u64) -> Envelope {
    Envelope { ctx, tag, seq, msg_id: seq, total_len: 0 }
}
fn rid(n: u64) -> RequestId {
    RequestId::from_u64(n)
}
fn posted(id: u64, src: Option<PeerId>, tag: Option<i32>) -> Posted {
    Posted { id: rid(id), src, ctx: 0, tag }
}
fn unexp(peer: PeerId, e: Envelope) -> Unexp {
    Unexp { peer, env: e, rendezvous: false, sync: false, windowed: false }
}
/// Delivers an envelope; queues it as unexpected if nothing matched.
fn deliver(m: &mut Matcher, peer: PeerId, e: Envelope) -> Arrival {
    let a = m.arrive(peer, &e);
    if a == Arrival::Unexpected {
        m.add_unexpected(unexp(peer, e));
    }
    a
}

#[test]
fn any_tag_receive_waits_for_a_missing_earlier_message() {
    let mut m = Matcher::default();
    assert!(m.post(posted(1, Some(3), None)).is_none());
    // seq 1 arrives first (another channel); seq 0 is still in flight.
    assert_eq!(deliver(&mut m, 3, env(0, 7, 1)), Arrival::Unexpected);
    // When seq 0 arrives it goes to the wildcard receive, not seq 1.
    assert_eq!(deliver(&mut m, 3, env(0, 5, 0)), Arrival::Matched(rid(1)));
    assert_eq!(m.unexpected_len(), 1);
}

#[test]
fn gap_fill_releases_waiting_wildcard_receives_in_order() {
    let mut m = Matcher::default();
    m.post(posted(1, None, None));
    m.post(posted(2, None, None));
    assert_eq!(deliver(&mut m, 0, env(0, 9, 2)), Arrival::Unexpected);
    assert_eq!(deliver(&mut m, 0, env(0, 8, 1)), Arrival::Unexpected);
    assert_eq!(deliver(&mut m, 0, env(0, 7, 0)), Arrival::Matched(rid(1)));
    let more = m.rescan();
    let got: Vec<(u64, RequestId)> = more.iter().map(|(u, r)| (u.env.seq, *r)).collect();
    assert_eq!(got, vec![(1, rid(2))]);
    assert_eq!(m.unexpected_len(), 1);
}

#[test]
fn specific_tag_receive_takes_its_message_despite_a_gap() {
    let mut m = Matcher::default();
    m.post(posted(1, Some(0), None));
    m.post(posted(2, Some(0), Some(5)));
    // seq 1 (tag 5) arrives before seq 0: the wildcard may not take it, the tag-5 receive may.
    assert_eq!(deliver(&mut m, 0, env(0, 5, 1)), Arrival::Matched(rid(2)));
    assert_eq!(deliver(&mut m, 0, env(0, 6, 0)), Arrival::Matched(rid(1)));
}

#[test]
fn posting_a_wildcard_takes_the_lowest_sequence_not_the_first_arrival() {
    let mut m = Matcher::default();
    deliver(&mut m, 1, env(0, 2, 1));
    deliver(&mut m, 1, env(0, 1, 0));
    let u = m.post(posted(1, Some(1), None)).expect("matched");
    assert_eq!(u.env.seq, 0);
    let u = m.post(posted(2, Some(1), None)).expect("matched");
    assert_eq!(u.env.seq, 1);
}

#[test]
fn posting_a_wildcard_with_a_gap_queues_it() {
    let mut m = Matcher::default();
    deliver(&mut m, 1, env(0, 2, 1));
    assert!(m.probe(Some(1), 0, None).is_none());
    assert!(m.post(posted(1, Some(1), None)).is_none());
    assert!(m.probe(Some(1), 0, Some(2)).is_some(), "a probe naming the tag sees it");
}

#[test]
fn relaxed_context_lets_wildcards_take_any_arrival() {
    let mut m = Matcher::default();
    m.set_relaxed(0, true);
    m.post(posted(1, None, None));
    assert_eq!(deliver(&mut m, 0, env(0, 5, 3)), Arrival::Matched(rid(1)));
}

#[test]
fn receives_match_in_posting_order_and_contexts_are_isolated() {
    let mut m = Matcher::default();
    m.post(posted(1, None, Some(4)));
    m.post(posted(2, None, Some(4)));
    assert_eq!(deliver(&mut m, 0, env(1, 4, 0)), Arrival::Unexpected, "other context");
    assert_eq!(deliver(&mut m, 0, env(0, 4, 0)), Arrival::Matched(rid(1)));
    assert_eq!(deliver(&mut m, 0, env(0, 4, 1)), Arrival::Matched(rid(2)));
}

#[test]
fn duplicates_are_reported_and_cancel_removes_posted() {
    let mut m = Matcher::default();
    assert_eq!(deliver(&mut m, 0, env(0, 1, 0)), Arrival::Unexpected);
    assert_eq!(m.arrive(0, &env(0, 1, 0)), Arrival::Duplicate);
    m.post(posted(9, Some(2), Some(1)));
    assert!(m.cancel(rid(9)));
    assert!(!m.cancel(rid(9)));
    assert_eq!(m.posted_len(), 0);
}

#[test]
fn any_source_any_tag_takes_an_in_order_message_from_any_peer() {
    let mut m = Matcher::default();
    deliver(&mut m, 1, env(0, 1, 1)); // out of order from peer 1
    deliver(&mut m, 2, env(0, 1, 0)); // in order from peer 2
    let u = m.post(posted(1, None, None)).expect("matched");
    assert_eq!((u.peer, u.env.seq), (2, 0));
}

#[test]
fn wildcard_receives_are_bound_to_a_gap_so_a_later_one_takes_the_message_beyond_it() {
    let mut m = Matcher::default();
    m.post(posted(1, Some(0), None));
    m.post(posted(2, Some(0), None));
    // seq 0 is lost in flight; seq 1 arrives: receive 1 is bound to seq 0, receive 2 takes seq 1.
    assert_eq!(deliver(&mut m, 0, env(0, 7, 1)), Arrival::Matched(rid(2)));
    assert!(!m.cancel(rid(1)), "a receive bound to a missing message is matched");
    assert_eq!(deliver(&mut m, 0, env(0, 9, 0)), Arrival::Matched(rid(1)));
    assert_eq!(m.bound_ahead(), 1);
}

#[test]
fn no_binding_when_an_earlier_receive_names_a_tag_or_any_source() {
    let mut m = Matcher::default();
    m.post(posted(1, Some(0), Some(5)));
    m.post(posted(2, Some(0), None));
    m.post(posted(3, Some(0), None));
    // Seq 0 might carry tag 5 (receive 1) or not (receive 2): nothing can be bound.
    assert_eq!(deliver(&mut m, 0, env(0, 7, 1)), Arrival::Unexpected);
    assert_eq!(deliver(&mut m, 0, env(0, 3, 0)), Arrival::Matched(rid(2)));
    let more: Vec<RequestId> = m.rescan().into_iter().map(|(_, r)| r).collect();
    assert_eq!(more, vec![rid(3)]);

    let mut m = Matcher::default();
    m.post(posted(1, None, None));
    m.post(posted(2, Some(0), None));
    // Another source may take receive 1 before seq 0 arrives.
    assert_eq!(deliver(&mut m, 0, env(0, 7, 1)), Arrival::Unexpected);
    assert_eq!(m.bound_ahead(), 0);
}

#[test]
fn receives_posted_after_an_early_arrival_bind_the_gap_then_take_it() {
    let mut m = Matcher::default();
    assert_eq!(deliver(&mut m, 2, env(0, 1, 2)), Arrival::Unexpected);
    assert!(m.post(posted(1, Some(2), None)).is_none(), "bound to seq 0");
    assert!(m.probe(Some(2), 0, None).is_none(), "seq 1 is missing and unbound");
    assert!(m.post(posted(2, Some(2), None)).is_none(), "bound to seq 1");
    assert_eq!(m.probe(Some(2), 0, None).map(|u| u.env.seq), Some(2));
    assert_eq!(m.post(posted(3, Some(2), None)).map(|u| u.env.seq), Some(2));
    assert_eq!(deliver(&mut m, 2, env(0, 4, 1)), Arrival::Matched(rid(2)));
    assert_eq!(deliver(&mut m, 2, env(0, 4, 0)), Arrival::Matched(rid(1)));
}

#[test]
fn a_message_below_every_gap_takes_the_first_receive_not_the_gap() {
    let mut m = Matcher::default();
    m.post(posted(1, Some(0), None));
    m.post(posted(2, Some(0), None));
    m.post(posted(3, Some(0), None));
    // seq 2 first: receives 1 and 2 are bound to seqs 0 and 1, receive 3 takes it.
    assert_eq!(deliver(&mut m, 0, env(0, 1, 2)), Arrival::Matched(rid(3)));
    assert_eq!(deliver(&mut m, 0, env(0, 1, 1)), Arrival::Matched(rid(2)));
    assert_eq!(deliver(&mut m, 0, env(0, 1, 0)), Arrival::Matched(rid(1)));

    // seq 3 ahead of 0..2; then seq 0 arrives while one receive is posted: it takes it.
    let mut m = Matcher::default();
    assert_eq!(deliver(&mut m, 0, env(0, 1, 3)), Arrival::Unexpected);
    assert_eq!(deliver(&mut m, 0, env(0, 1, 1)), Arrival::Unexpected);
    m.post(posted(1, Some(0), None));
    assert_eq!(deliver(&mut m, 0, env(0, 1, 0)), Arrival::Matched(rid(1)));
    assert!(m.rescan().is_empty());
}

#[test]
fn a_lost_peer_fails_its_bound_receives() {
    let mut m = Matcher::default();
    m.post(posted(1, Some(4), None));
    m.post(posted(2, Some(4), None));
    deliver(&mut m, 4, env(0, 1, 2));
    assert_eq!(m.posted_len(), 0);
    let mut gone = m.remove_posted_from(4);
    gone.sort_by_key(|r| r.to_u64());
    assert_eq!(gone, vec![rid(1), rid(2)]);
}

#[test]
fn a_tag_receive_waits_behind_an_earlier_wildcard_until_that_one_is_gone() {
    let mut m = Matcher::default();
    m.post(posted(1, None, None));
    m.post(posted(2, Some(0), Some(5)));
    // Seq 1 (tag 5) from peer 0 with seq 0 missing: receive 1 accepts it
    // but may not take it out of order, so receive 2 may not take it either.
    assert_eq!(deliver(&mut m, 0, env(0, 5, 1)), Arrival::Unexpected);
    // Peer 1's message takes receive 1: now receive 2 is the first to accept seq 1.
    assert_eq!(deliver(&mut m, 1, env(0, 3, 0)), Arrival::Matched(rid(1)));
    let released: Vec<(u64, RequestId)> = m.rescan().iter().map(|(u, r)| (u.env.seq, *r)).collect();
    assert_eq!(released, vec![(1, rid(2))]);

    // The same after a cancel of the wildcard.
    let mut m = Matcher::default();
    m.post(posted(1, None, None));
    assert_eq!(deliver(&mut m, 0, env(0, 5, 1)), Arrival::Unexpected);
    assert!(m.post(posted(2, Some(0), Some(5))).is_none(), "held back by receive 1");
    assert!(m.probe(Some(0), 0, Some(5)).is_none());
    assert!(m.cancel(rid(1)));
    let released: Vec<(u64, RequestId)> = m.rescan().iter().map(|(u, r)| (u.env.seq, *r)).collect();
    assert_eq!(released, vec![(1, rid(2))]);
}

/// Random arrivals (each tag's messages in order, tags interleaved as
/// independent channels would deliver them) and random receives from two
/// sources: the matches must keep MPI's two non-overtaking rules, and every
/// message must be matched once a drain of wildcard receives is posted.
/// One random run: the matcher, the receives in posting order, and which
/// (peer, seq) each receive got.
struct Run {
    seed: u64,
    m: Matcher,
    recvs: Vec<Posted>,
    got: HashMap<u64, (PeerId, u64)>,
}

impl Run {
    fn record(&mut self, r: RequestId, peer: PeerId, seq: u64) {
        assert!(self.got.insert(r.to_u64(), (peer, seq)).is_none(), "seed {}: receive matched twice", self.seed);
    }
    fn post(&mut self, src: Option<PeerId>, tag: Option<i32>) {
        let p = Posted { id: rid(self.recvs.len() as u64), src, ctx: 0, tag };
        self.recvs.push(p);
        if let Some(u) = self.m.post(p) {
            self.record(p.id, u.peer, u.env.seq);
        }
    }
}

#[test]
fn random_orders_keep_mpi_non_overtaking() {
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }
    const PEERS: u32 = 2;
    const PER_PEER: u64 = 12;
    let (mut bound, mut released) = (0, 0);
    for seed in 1..3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        // Messages per peer: (tag) by seq; pending per (peer, tag) in seq order.
        let tags: Vec<Vec<i32>> = (0..PEERS).map(|_| (0..PER_PEER).map(|_| rng.below(3) as i32).collect()).collect();
        let mut queues: Vec<Vec<std::collections::VecDeque<u64>>> =
            (0..PEERS).map(|p| (0..3).map(|t| (0..PER_PEER).filter(|&s| tags[p as usize][s as usize] == t).collect()).collect()).collect();
        let mut run = Run { seed, m: Matcher::default(), recvs: vec![], got: HashMap::default() };
        loop {
            let remaining: Vec<(u32, usize)> =
                (0..PEERS).flat_map(|p| (0..3).map(move |t| (p, t))).filter(|&(p, t)| !queues[p as usize][t].is_empty()).collect();
            if remaining.is_empty() {
                break;
            }
            if rng.below(3) == 0 {
                let src = match rng.below(3) {
                    0 => None,
                    s => Some(s as u32 - 1),
                };
                let tag = if rng.below(2) == 0 { None } else { Some(rng.below(3) as i32) };
                run.post(src, tag);
            } else {
                let (p, t) = remaining[rng.below(remaining.len() as u64) as usize];
                let seq = queues[p as usize][t].pop_front().expect("non-empty");
                let e = env(0, t as i32, seq);
                match run.m.arrive(p, &e) {
                    Arrival::Matched(r) => run.record(r, p, seq),
                    Arrival::Unexpected => run.m.add_unexpected(unexp(p, e)),
                    Arrival::Duplicate => panic!("seed {seed}: duplicate"),
                }
                for (u, r) in run.m.rescan() {
                    run.record(r, u.peer, u.env.seq);
                    released += 1;
                }
            }
        }
        bound += run.m.bound_ahead();
        while run.m.unexpected_len() > 0 {
            let before = run.m.unexpected_len();
            run.post(None, None);
            assert!(run.m.unexpected_len() < before, "seed {seed}: a wildcard receive found nothing with everything arrived");
        }
        let all: usize = (PEERS as u64 * PER_PEER) as usize;
        let Run { recvs, got, .. } = run;
        let matched_msgs = got.len();
        // Receives left posted may stay unmatched; every message must be matched.
        assert_eq!(matched_msgs, all, "seed {seed}: messages left unmatched");
        let accepts =
            |r: &Posted, peer: PeerId, seq: u64| r.src.is_none_or(|s| s == peer) && r.tag.is_none_or(|t| t == tags[peer as usize][seq as usize]);
        let recv_of: HashMap<(PeerId, u64), u64> = got.iter().map(|(r, m)| (*m, *r)).collect();
        for (&r, &(peer, seq)) in &got {
            let recv = &recvs[r as usize];
            // Rule 1: an earlier message of the same sender that this receive accepts went to an earlier receive.
            for earlier in 0..seq {
                if accepts(recv, peer, earlier) {
                    assert!(recv_of[&(peer, earlier)] < r, "seed {seed}: receive {r} took ({peer},{seq}) over ({peer},{earlier})");
                }
            }
            // Rule 2: an earlier receive that accepts this message took an earlier message of this sender (or another sender's).
            for (r1, earlier) in recvs.iter().enumerate().take(r as usize) {
                if accepts(earlier, peer, seq) {
                    match got.get(&(r1 as u64)) {
                        Some(&(p1, s1)) => assert!(p1 != peer || s1 < seq, "seed {seed}: receive {r} took ({peer},{seq}) before receive {r1}"),
                        None => panic!("seed {seed}: receive {r1} left posted while a later one took a message it accepts"),
                    }
                }
            }
        }
    }
    assert!(bound > 100 && released > 100, "the runs bound {bound} receives ahead and released {released} held-back messages");
}
