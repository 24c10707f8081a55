//! MPI_Gather and MPI_Gatherv across sites: each site gathers to its leader,
//! and every other leader sends the root its whole site in one message.

use super::super::args::Blocks;
use super::super::comm::{CollComm, CollError};
use super::super::sites::{Layout, Site, FIRST_PHASE, TAG_LEADERS};
use super::{decode_lengths, encode_lengths, packed, Rooted};

/// `mine` is this rank's block (the caller resolved MPI_IN_PLACE and
/// checked every length); `recv` is only used at the root.
pub(in crate::coll) fn gather(comm: &mut dyn CollComm, l: &Layout, mine: &[u8], recv: &mut [u8], block: usize, root: usize) -> Result<(), CollError> {
    let r = Rooted::new(l, root);
    let members = l.my_site().to_vec();
    let rank = comm.rank();
    let leads = rank == r.leader(l.mine);
    let mut site_blocks = if leads { vec![0u8; block * members.len()] } else { Vec::new() };
    super::super::gather::gather(&mut Site::new(comm, &members, FIRST_PHASE), Some(mine), &mut site_blocks, block, r.my_local_leader())?;
    if !leads {
        return Ok(());
    }
    if rank != root {
        return comm.send(&site_blocks, root, TAG_LEADERS);
    }
    let mut parts = r.collect_from_leaders(comm, TAG_LEADERS, |s| block * l.sites[s].len())?;
    parts[r.root_site] = site_blocks;
    for (site, part) in l.sites.iter().zip(&parts) {
        for (k, &rank) in site.iter().enumerate() {
            recv[rank * block..(rank + 1) * block].copy_from_slice(&part[k * block..(k + 1) * block]);
        }
    }
    Ok(())
}

/// `send` is this rank's block (`None`: MPI_IN_PLACE at the root);
/// `recv_blocks` and `recv` only matter at the root. The caller checked
/// every argument it can see.
///
/// In the root's site, members send straight to the root (flat gatherv).
/// In any other site the leader cannot know its members' lengths, so they
/// first gather their lengths to it (8 bytes each), then their blocks; the
/// leader sends the root the lengths followed by the blocks, and the root,
/// which knows every count, checks each length as the flat algorithm does.
pub(in crate::coll) fn gatherv(
    comm: &mut dyn CollComm,
    l: &Layout,
    send: Option<&[u8]>,
    recv: &mut [u8],
    recv_blocks: Blocks<'_>,
    root: usize,
) -> Result<(), CollError> {
    let r = Rooted::new(l, root);
    let members = l.my_site().to_vec();
    let rank = comm.rank();
    if l.mine == r.root_site {
        let local_root = r.my_local_leader();
        let mut site = Site::new(comm, &members, FIRST_PHASE);
        if rank != root {
            return super::super::gather::gatherv(&mut site, send, &mut [], Blocks::new(&[], &[]), local_root);
        }
        let counts: Vec<usize> = members.iter().map(|&m| recv_blocks.counts[m]).collect();
        let displs: Vec<usize> = members.iter().map(|&m| recv_blocks.displs[m]).collect();
        super::super::gather::gatherv(&mut site, send, recv, Blocks::new(&counts, &displs), local_root)?;
        return from_other_sites(comm, &r, recv, recv_blocks);
    }

    // Another site: lengths, then blocks, to the leader (local rank 0).
    let mine = send.unwrap_or_default();
    let leads = rank == members[0];
    let mut site = Site::new(comm, &members, FIRST_PHASE);
    let mut lens = if leads { vec![0u8; 8 * members.len()] } else { Vec::new() };
    super::super::gather::gather(&mut site, Some(&encode_lengths([mine.len()].into_iter())), &mut lens, 8, 0)?;
    if !leads {
        return super::super::gather::gatherv(&mut site, Some(mine), &mut [], Blocks::new(&[], &[]), 0);
    }
    let counts = decode_lengths(&lens)?;
    let displs: Vec<usize> = packed(&counts).into_iter().map(|d| d + lens.len()).collect();
    let mut message = lens;
    message.resize(message.len() + counts.iter().sum::<usize>(), 0);
    super::super::gather::gatherv(&mut site, Some(mine), &mut message, Blocks::new(&counts, &displs), 0)?;
    comm.send(&message, root, TAG_LEADERS)
}

/// At the root: every other leader's message, checked against the counts
/// and unpacked into `recv`.
fn from_other_sites(comm: &mut dyn CollComm, r: &Rooted<'_>, recv: &mut [u8], recv_blocks: Blocks<'_>) -> Result<(), CollError> {
    let sites = &r.l.sites;
    let parts = r.collect_from_leaders(comm, TAG_LEADERS, |s| sites[s].iter().map(|&m| 8 + recv_blocks.counts[m]).sum())?;
    for (s, part) in parts.iter().enumerate().filter(|(s, _)| *s != r.root_site) {
        let (lens, data) = part.split_at(8 * sites[s].len());
        let mut at = 0;
        for (&m, got) in sites[s].iter().zip(decode_lengths(lens)?) {
            let expected = recv_blocks.counts[m];
            if got != expected {
                return Err(CollError::LengthMismatch { peer: m, expected, got });
            }
            recv[recv_blocks.range(m)].copy_from_slice(&data[at..at + got]);
            at += got;
        }
    }
    Ok(())
}
