//! MPI_Scatter and MPI_Scatterv across sites: the root sends every other
//! site's leader that site's blocks at once, then each site scatters.

use super::super::args::Blocks;
use super::super::comm::{post, CollComm, CollError, SendItem};
use super::super::sites::{Layout, Site, FIRST_PHASE, TAG_LEADERS};
use super::super::TAG_SCATTERV;
use super::{decode_lengths, encode_lengths, packed, Rooted, TAG_LEADERS_DATA};

/// `send` (the root's, `block` bytes per rank in rank order) and `recv`
/// (`None`: MPI_IN_PLACE at the root) were checked by the caller.
///
/// The root posts its messages to the other leaders before serving its own
/// site, so the slow links start first.
pub(in crate::coll) fn scatter(
    comm: &mut dyn CollComm,
    l: &Layout,
    send: &[u8],
    recv: Option<&mut [u8]>,
    block: usize,
    root: usize,
) -> Result<(), CollError> {
    let r = Rooted::new(l, root);
    let members = l.my_site().to_vec();
    let rank = comm.rank();
    let site_blocks = |site: &[usize]| -> Vec<u8> { site.iter().flat_map(|&m| &send[m * block..(m + 1) * block]).copied().collect() };
    let mut mine = Vec::new();
    if rank == root {
        let parts: Vec<(usize, Vec<u8>)> =
            l.sites.iter().enumerate().filter(|(s, _)| *s != r.root_site).map(|(s, site)| (r.leader(s), site_blocks(site))).collect();
        let sends: Vec<SendItem<'_>> = parts.iter().map(|(peer, buf)| SendItem { buf, peer: *peer, tag: TAG_LEADERS }).collect();
        post(comm, &sends, &mut [])?;
        mine = site_blocks(&members);
    } else if rank == r.leader(l.mine) {
        mine = vec![0u8; block * members.len()];
        comm.recv(&mut mine, root, TAG_LEADERS)?;
    }
    super::super::scatter::scatter(&mut Site::new(comm, &members, FIRST_PHASE), &mine, recv, block, r.my_local_leader())
}

/// `send` and `send_blocks` matter only at the root; the caller checked
/// them and the MPI_IN_PLACE rule.
///
/// One exchange at the root: its own site's blocks straight to their ranks
/// (as the flat algorithm), and to each other leader the site's counts
/// (`TAG_LEADERS`) and then the site's blocks packed (`TAG_LEADERS_DATA`).
/// The leader reads the counts, takes the blocks and hands each member its
/// own in one more exchange (linear, as inside the root's site); each
/// rank's receive checks its length.
pub(in crate::coll) fn scatterv(
    comm: &mut dyn CollComm,
    l: &Layout,
    send: &[u8],
    send_blocks: Blocks<'_>,
    recv: Option<&mut [u8]>,
    root: usize,
) -> Result<(), CollError> {
    let r = Rooted::new(l, root);
    let members = l.my_site().to_vec();
    let rank = comm.rank();
    let tag = FIRST_PHASE + TAG_SCATTERV;
    if rank == root {
        let others: Vec<(usize, Vec<u8>, Vec<u8>)> = l
            .sites
            .iter()
            .enumerate()
            .filter(|(s, _)| *s != r.root_site)
            .map(|(s, site)| {
                let counts = encode_lengths(site.iter().map(|&m| send_blocks.counts[m]));
                let data: Vec<u8> = site.iter().flat_map(|&m| &send[send_blocks.range(m)]).copied().collect();
                (r.leader(s), counts, data)
            })
            .collect();
        let mut sends: Vec<SendItem<'_>> = Vec::new();
        for (peer, counts, data) in &others {
            sends.push(SendItem { buf: counts, peer: *peer, tag: TAG_LEADERS });
            sends.push(SendItem { buf: data, peer: *peer, tag: TAG_LEADERS_DATA });
        }
        sends.extend(members.iter().filter(|&&m| m != root).map(|&m| SendItem { buf: &send[send_blocks.range(m)], peer: m, tag }));
        post(comm, &sends, &mut [])?;
        if let Some(own) = recv {
            own.copy_from_slice(&send[send_blocks.range(root)]);
        }
        return Ok(());
    }
    let Some(recv) = recv else {
        return Err(CollError::BadArgument("MPI_IN_PLACE in scatterv is only allowed at the root".into()));
    };
    if l.mine == r.root_site {
        return comm.recv(recv, root, tag);
    }
    let leader = members[0];
    if rank != leader {
        return comm.recv(recv, leader, tag);
    }
    let mut lens = vec![0u8; 8 * members.len()];
    comm.recv(&mut lens, root, TAG_LEADERS)?;
    let counts = decode_lengths(&lens)?;
    let mut data = vec![0u8; counts.iter().sum::<usize>()];
    comm.recv(&mut data, root, TAG_LEADERS_DATA)?;
    let displs = packed(&counts);
    let sends: Vec<SendItem<'_>> =
        members.iter().zip(counts.iter().zip(&displs)).skip(1).map(|(&m, (&c, &d))| SendItem { buf: &data[d..d + c], peer: m, tag }).collect();
    post(comm, &sends, &mut [])?;
    // The leader's own block, checked as its receive from the root would be.
    let own = &data[..counts[0]];
    if own.len() != recv.len() {
        return Err(CollError::LengthMismatch { peer: root, expected: recv.len(), got: own.len() });
    }
    recv.copy_from_slice(own);
    Ok(())
}
