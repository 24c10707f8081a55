//! MPI_Allgatherv across sites: site gatherv to the leader, leaders swap
//! their sites' blocks all to all, then each site broadcasts everything.

use super::super::args::Blocks;
use super::super::comm::{CollComm, CollError, RecvItem, SendItem};
use super::super::sites::{Layout, Site, FIRST_PHASE, SECOND_PHASE, TAG_LEADERS};
use super::packed;

/// `own` is this rank's block; `pieces[i]` is where rank i's block goes
/// and `counts[i]` its length (the caller checked and split `recv`).
///
/// Every rank knows every count, so no lengths travel. The leader (lowest
/// rank of the site) collects its site linearly, sends the site's blocks to
/// every other leader and receives theirs in one exchange, and broadcasts
/// all blocks packed in rank order; each rank unpacks them into `pieces`,
/// leaving the gaps between blocks untouched.
pub(in crate::coll) fn allgatherv(
    comm: &mut dyn CollComm,
    l: &Layout,
    own: &[u8],
    mut pieces: Vec<&mut [u8]>,
    counts: &[usize],
) -> Result<(), CollError> {
    let members = l.my_site().to_vec();
    let leads = comm.rank() == members[0];
    let site_counts = |site: &[usize]| -> Vec<usize> { site.iter().map(|&m| counts[m]).collect() };
    let mine = site_counts(&members);
    let mine_displs = packed(&mine);
    let mut site_data = if leads { vec![0u8; mine.iter().sum::<usize>()] } else { Vec::new() };
    let blocks = if leads { Blocks::new(&mine, &mine_displs) } else { Blocks::new(&[], &[]) };
    super::super::gather::gatherv(&mut Site::new(comm, &members, FIRST_PHASE), Some(own), &mut site_data, blocks, 0)?;

    let displs = packed(counts);
    let mut all = vec![0u8; counts.iter().sum::<usize>()];
    if leads {
        let mut parts: Vec<Vec<u8>> = l.sites.iter().map(|s| vec![0u8; site_counts(s).iter().sum::<usize>()]).collect();
        {
            let others: Vec<usize> = (0..l.sites.len()).filter(|&s| s != l.mine).collect();
            let sends: Vec<SendItem<'_>> = others.iter().map(|&s| SendItem { buf: &site_data, peer: l.sites[s][0], tag: TAG_LEADERS }).collect();
            let mut recvs: Vec<RecvItem<'_>> = parts
                .iter_mut()
                .enumerate()
                .filter(|(s, _)| *s != l.mine)
                .map(|(s, buf)| RecvItem { buf, peer: l.sites[s][0], tag: TAG_LEADERS })
                .collect();
            comm.exchange(&sends, &mut recvs)?;
        }
        parts[l.mine] = site_data;
        for (site, part) in l.sites.iter().zip(&parts) {
            let mut at = 0;
            for &m in site {
                all[displs[m]..displs[m] + counts[m]].copy_from_slice(&part[at..at + counts[m]]);
                at += counts[m];
            }
        }
    }
    super::super::bcast::bcast(&mut Site::new(comm, &members, SECOND_PHASE), &mut all, 0)?;
    for (i, piece) in pieces.iter_mut().enumerate() {
        piece.copy_from_slice(&all[displs[i]..displs[i] + counts[i]]);
    }
    Ok(())
}
