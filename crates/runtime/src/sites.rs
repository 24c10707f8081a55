//! Where each rank runs: its host and its site. Hosts of one site are near
//! each other; sites are joined by the WAN. Site-aware collectives cross
//! each slow link as few times as they can, and need every rank to agree on
//! the map.
//!
//! The launcher passes both maps when it knows them (`WANMPI_HOST_MAP`;
//! `WANMPI_SITE_MAP` from hostfile `site=` fields or emulated sites). With
//! no site map the ranks measure one at init: each finds which peers its
//! transport measured near (`FAR_RTT`), the ranks share what they found,
//! and every rank takes the same clusters (connected components of "near");
//! ranks of one host are near whatever was measured. Under Slurm the
//! allocation is one site (`process_manager.rs`; mpirun's `job/slurm.rs`).

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};
use wanmpi_transport::{PeerId, Transport};

/// Most sites the site-aware algorithms take on: their leaders talk all to
/// all, which stops paying beyond a few dozen sites.
pub const MAX_SITES: usize = 32;
/// Largest job that measures its sites at init (the exchange is size² bytes).
pub const MAX_MEASURED: u32 = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteMap {
    /// Site index of every world rank.
    site: Vec<u32>,
    /// Number of distinct sites.
    count: usize,
}

impl SiteMap {
    /// Every rank in one site: the flat algorithms.
    pub fn single(size: u32) -> SiteMap {
        SiteMap::new(vec![0; size as usize])
    }

    fn new(site: Vec<u32>) -> SiteMap {
        let mut distinct = site.clone();
        distinct.sort_unstable();
        distinct.dedup();
        SiteMap { count: distinct.len(), site }
    }

    /// From a comma list with one index per rank, as the launcher writes it.
    pub fn parse(var: &str, text: &str, size: u32) -> MpiResult<SiteMap> {
        let bad = |why: String| MpiError::new(ErrorClass::Arg, format!("{var}={text:?}: {why}"));
        let site: Vec<u32> =
            text.split(',').map(|w| w.trim().parse::<u32>().map_err(|_| bad(format!("{w:?} is not an index")))).collect::<MpiResult<_>>()?;
        if site.len() != size as usize {
            return Err(bad(format!("{} entries for {size} ranks", site.len())));
        }
        Ok(SiteMap::new(site))
    }

    /// The launcher's site map, if it gave one.
    pub fn from_env(size: u32) -> MpiResult<Option<SiteMap>> {
        match std::env::var("WANMPI_SITE_MAP") {
            Ok(v) if !v.trim().is_empty() => SiteMap::parse("WANMPI_SITE_MAP", &v, size).map(Some),
            _ => Ok(None),
        }
    }

    /// Clusters from every rank's near set (`near[r][p]`: rank r measured
    /// p near): connected components, numbered by their lowest rank. A
    /// one-sided "near" counts, so a rank that could not measure a path
    /// still joins its neighbour's site.
    pub fn from_near_sets(near: &[Vec<bool>]) -> SiteMap {
        let n = near.len();
        let mut site: Vec<Option<u32>> = vec![None; n];
        let mut next = 0u32;
        for start in 0..n {
            if site[start].is_some() {
                continue;
            }
            let mut stack = vec![start];
            site[start] = Some(next);
            while let Some(r) = stack.pop() {
                for p in 0..n {
                    let linked = near[r].get(p).copied().unwrap_or(false) || near[p].get(r).copied().unwrap_or(false);
                    if linked && site[p].is_none() {
                        site[p] = Some(next);
                        stack.push(p);
                    }
                }
            }
            next += 1;
        }
        SiteMap::new(site.into_iter().map(|s| s.unwrap_or(0)).collect())
    }

    /// Site of world rank `r`; one site for all when there are too many
    /// sites for the site-aware algorithms to pay.
    pub fn site_of(&self, r: u32) -> usize {
        if self.count > MAX_SITES {
            return 0;
        }
        self.site.get(r as usize).copied().unwrap_or(0) as usize
    }

    /// The index of every rank as given (no `MAX_SITES` collapse): a host
    /// map read with `parse` gives each rank's host.
    pub fn indices(&self) -> &[u32] {
        &self.site
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The map as the launcher writes it (for stats and tests).
    pub fn to_text(&self) -> String {
        self.site.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",")
    }
}

/// This rank's near set as bytes (1 = near, 0 = far or not measured), for
/// the exchange at init. Ranks of its own host (the launcher's
/// `WANMPI_HOST_MAP`) are near whatever the transport measured: a
/// transport that measures no path (sctp before its first round trips, a
/// shared-memory peer) must not make each rank a site of its own.
pub fn near_bytes(rank: PeerId, size: u32, transport: &dyn Transport) -> Vec<u8> {
    let hosts = match std::env::var("WANMPI_HOST_MAP") {
        Ok(v) if !v.trim().is_empty() => SiteMap::parse("WANMPI_HOST_MAP", &v, size).ok().map(|m| m.site),
        _ => None,
    };
    near_of(rank, size, hosts.as_deref(), |p| transport.path(p).and_then(|s| s.is_far()))
}

/// `near_bytes` over a host map and what was measured (`far(p)`: `None`
/// where nothing was).
fn near_of(rank: PeerId, size: u32, hosts: Option<&[u32]>, far: impl Fn(PeerId) -> Option<bool>) -> Vec<u8> {
    let host = |r: PeerId| hosts.and_then(|h| h.get(r as usize).copied());
    let own = host(rank);
    (0..size).map(|p| u8::from(p == rank || (own.is_some() && host(p) == own) || far(p) == Some(false))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchers_map_is_read_and_checked() {
        let m = SiteMap::parse("V", "0,0,1,1,2", 5).unwrap();
        assert_eq!((m.count(), m.site_of(3), m.site_of(4)), (3, 1, 2));
        assert!(SiteMap::parse("V", "0,0", 3).is_err());
        assert!(SiteMap::parse("V", "0,x,1", 3).is_err());
    }

    #[test]
    fn near_sets_cluster_into_sites() {
        // 0,1 near; 2,3 near; 4 alone; 5 measured nothing but 3 saw it near.
        let pairs = [(0, 1), (2, 3), (3, 5)];
        let near: Vec<Vec<bool>> = (0..6).map(|r| (0..6).map(|p| p == r || pairs.iter().any(|&(a, b)| (a, b) == (r, p))).collect()).collect();
        let m = SiteMap::from_near_sets(&near);
        assert_eq!(m.to_text(), "0,0,1,1,2,1");
    }

    /// Nothing measured (sctp's case on 3 nodes x 2 ranks): each node is
    /// one site, not each rank (was "6 sites").
    #[test]
    fn ranks_of_one_host_share_a_site_when_nothing_was_measured() {
        let hosts = [0, 0, 1, 1, 2, 2];
        let near: Vec<Vec<bool>> = (0..6).map(|r| near_of(r, 6, Some(&hosts), |_| None).iter().map(|b| *b != 0).collect()).collect();
        assert_eq!(SiteMap::from_near_sets(&near).to_text(), "0,0,1,1,2,2");
        let alone: Vec<Vec<bool>> = (0..6).map(|r| near_of(r, 6, None, |_| None).iter().map(|b| *b != 0).collect()).collect();
        assert_eq!(SiteMap::from_near_sets(&alone).count(), 6, "without a host map, as before");
    }

    #[test]
    fn too_many_sites_means_one() {
        let m = SiteMap::parse("V", &(0..40).map(|i| i.to_string()).collect::<Vec<_>>().join(","), 40).unwrap();
        assert_eq!(m.count(), 40);
        assert!((0..40).all(|r| m.site_of(r) == 0));
    }
}
