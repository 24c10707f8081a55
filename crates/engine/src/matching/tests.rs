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
    let more = m.rematch(0, 0);
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
