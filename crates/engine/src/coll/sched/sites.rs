//! The site-aware algorithms of `coll/sites.rs` as schedules, so that
//! nonblocking and persistent barrier, bcast and allreduce cross each slow
//! link once, as the blocking calls do: inside a site the flat schedules
//! of `build.rs` and `reduce.rs` run over the site's ranks (`embed`), and
//! only site leaders talk across sites, all at once in one round. The
//! messages inside a site and the combining order are those of the
//! blocking versions, so results are bit-identical to them.
//!
//! Each builder returns `None` when the ranks are one site (or, for
//! allreduce, when a non-commutative op rules the algorithm out): the
//! caller then builds the flat schedule, as the blocking calls choose.

use super::{build, reduce, tag, Local, Msg, Round, Schedule, Span};
use crate::coll::args::{check_len, check_root, reduction_bytes};
use crate::coll::comm::CollError;
use crate::coll::hier;
use crate::coll::sites::{Layout, FIRST_PHASE, SECOND_PHASE, TAG_LEADERS};
use crate::coll::{TAG_ALLREDUCE, TAG_BARRIER, TAG_BCAST};
use crate::datatype::BasicType;
use crate::op::Op;

fn msg(peer: usize, tag: i32, span: Span) -> Msg {
    Msg { peer, tag, span }
}

/// Appends `sub`, a schedule built over the ranks `members` (its peers are
/// indices into it), to `s`: peers become the members' ranks, tags move up
/// by `shift`, `sub`'s buffer 0 becomes `s`'s buffer 0 (its content is
/// dropped: `s`'s buffer 0 holds the data by then) and its other buffers
/// are added to `s`.
fn embed(s: &mut Schedule, sub: Schedule, members: &[usize], shift: i32) {
    let base = s.bufs.len() - 1;
    let buf = |i: usize| if i == 0 { 0 } else { base + i };
    let span = |sp: Span| Span { buf: buf(sp.buf), ..sp };
    let moved = |m: &Msg| msg(members[m.peer], m.tag + shift, span(m.span));
    s.bufs.extend(sub.bufs.into_iter().skip(1));
    for r in sub.rounds {
        let then = r
            .then
            .iter()
            .map(|l| match *l {
                Local::Copy { from, to } => Local::Copy { from: span(from), to: span(to) },
                Local::Reduce { input, inout, count } => Local::Reduce { input: span(input), inout: span(inout), count },
            })
            .collect();
        s.push(Round { sends: r.sends.iter().map(moved).collect(), recvs: r.recvs.iter().map(moved).collect(), then });
    }
}

/// Whether ranks of these sites span more than one (the site-aware
/// schedules apply).
pub fn spans_sites(sites: &[usize]) -> bool {
    sites.iter().any(|&s| s != sites[0])
}

/// Whether `allreduce` applies: several sites, and a commutative op or
/// sites that are each one run of ranks.
pub fn allreduce_fits(sites: &[usize], op: &Op) -> bool {
    Layout::from_sites(0, sites).is_some_and(|l| hier::reduce_allowed(&l, op))
}

/// This rank's index in its site.
fn position(l: &Layout, rank: usize) -> usize {
    l.my_site().iter().position(|&r| r == rank).unwrap_or(0)
}

/// Fan-in to the site's leader, leaders signal every other leader, fan-out.
pub fn barrier(rank: usize, sites: &[usize], seq: u32) -> Option<Schedule> {
    let l = Layout::from_sites(rank, sites)?;
    let members = l.my_site();
    let leader = members[0];
    let (t_in, t_out, t_lead) = (tag(FIRST_PHASE + TAG_BARRIER, seq), tag(SECOND_PHASE + TAG_BARRIER, seq), tag(TAG_LEADERS + TAG_BARRIER, seq));
    let e = Span::EMPTY;
    let mut s = Schedule::new(vec![Vec::new()]);
    if rank != leader {
        s.push(Round { sends: vec![msg(leader, t_in, e)], ..Round::default() });
        s.push(Round { recvs: vec![msg(leader, t_out, e)], ..Round::default() });
        return Some(s);
    }
    s.push(Round { recvs: members[1..].iter().map(|&m| msg(m, t_in, e)).collect(), ..Round::default() });
    let others: Vec<usize> = l.sites.iter().enumerate().filter(|(i, _)| *i != l.mine).map(|(_, s)| s[0]).collect();
    s.push(Round {
        sends: others.iter().map(|&p| msg(p, t_lead, e)).collect(),
        recvs: others.iter().map(|&p| msg(p, t_lead, e)).collect(),
        then: vec![],
    });
    s.push(Round { sends: members[1..].iter().map(|&m| msg(m, t_out, e)).collect(), ..Round::default() });
    Some(s)
}

/// The root sends to every other site's leader (the lowest rank there) in
/// the same round as its own site's first sends, then each site's binomial
/// bcast from its leader (the root in its own site). Buffer 0 is the result.
pub fn bcast(rank: usize, sites: &[usize], buf: Vec<u8>, root: usize, seq: u32) -> Result<Option<Schedule>, CollError> {
    check_root(root, sites.len())?;
    let Some(l) = Layout::from_sites(rank, sites) else { return Ok(None) };
    let members = l.my_site();
    let leader = if members.contains(&root) { root } else { members[0] };
    let local_root = members.iter().position(|&r| r == leader).unwrap_or(0);
    let all = Span::whole(0, buf.len());
    let t_lead = tag(TAG_LEADERS + TAG_BCAST, seq);
    let site = build::bcast(position(&l, rank), members.len(), vec![0; buf.len()], local_root, seq)?;
    let mut s = Schedule::new(vec![buf]);
    if rank == root {
        let far: Vec<Msg> = l.sites.iter().filter(|s| !s.contains(&root)).map(|s| msg(s[0], t_lead, all)).collect();
        // The root's site schedule is one round of sends (it receives
        // nothing); the far leaders' sends join it.
        s.push(Round { sends: far, ..Round::default() });
    } else if rank == leader {
        s.push(Round { recvs: vec![msg(root, t_lead, all)], ..Round::default() });
    }
    embed(&mut s, site, members, FIRST_PHASE);
    if rank == root && s.rounds.len() == 2 {
        let own = s.rounds.pop().expect("two rounds");
        s.rounds[0].sends.extend(own.sends);
    }
    Ok(Some(s))
}

/// Site reduce to the leader, leaders swap partials all to all and combine
/// them in site order, site bcast. `None` when the ranks are one site or
/// the op is not commutative and a site's ranks are not one run.
pub fn allreduce(rank: usize, sites: &[usize], data: Vec<u8>, count: usize, ty: BasicType, op: &Op, seq: u32) -> Result<Option<Schedule>, CollError> {
    let n = reduction_bytes(count, ty, op)?;
    check_len("allreduce buffer", data.len(), n)?;
    let Some(l) = Layout::from_sites(rank, sites) else { return Ok(None) };
    if !hier::reduce_allowed(&l, op) {
        return Ok(None);
    }
    let members = l.my_site();
    let me = position(&l, rank);
    let mut s = Schedule::new(vec![data]);
    s.reduction = Some((op.clone(), ty));
    embed(&mut s, reduce::reduce(me, members.len(), vec![0; n], count, ty, op, 0, seq)?, members, FIRST_PHASE);
    if me == 0 {
        let t = tag(TAG_LEADERS + TAG_ALLREDUCE, seq);
        let acc = Span::whole(0, n);
        // Every site's partial in site order; this site's is buffer 0.
        let mut chain = Vec::with_capacity(l.sites.len());
        let mut round = Round::default();
        for (i, site) in l.sites.iter().enumerate() {
            if i == l.mine {
                chain.push(acc);
                continue;
            }
            s.bufs.push(vec![0; n]);
            let part = Span::whole(s.bufs.len() - 1, n);
            round.sends.push(msg(site[0], t, acc));
            round.recvs.push(msg(site[0], t, part));
            chain.push(part);
        }
        // As hier::combine_in_order: each partial is the right operand of
        // the sites before it.
        for w in chain.windows(2) {
            round.then.push(Local::Reduce { input: w[0], inout: w[1], count });
        }
        let last = *chain.last().expect("two sites or more");
        if last != acc {
            round.then.push(Local::Copy { from: last, to: acc });
        }
        s.push(round);
    }
    embed(&mut s, build::bcast(me, members.len(), vec![0; n], 0, seq)?, members, SECOND_PHASE);
    Ok(Some(s))
}
