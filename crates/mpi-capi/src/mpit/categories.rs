//! Categories: the variables grouped as wanmpi is layered — the engine,
//! its peers, the WAN, collectives, progress, and each transport under
//! "wanmpi_transports"; "wanmpi" holds them all. The sets never change, so
//! MPI_T_category_changed always answers the same number.

use std::ffi::c_char;
use std::os::raw::c_int;
use std::sync::LazyLock;

use super::cvars::CVARS;
use super::pvars::PVARS;
use super::strings::{in_str, put_str};
use super::{code, entry, out, put, TResult};

pub(super) struct Category {
    name: &'static str,
    desc: &'static str,
    cvars: Vec<c_int>,
    pvars: Vec<c_int>,
    categories: Vec<c_int>,
}

/// (name, description, subcategories by name).
const LAYOUT: &[(&str, &str, &[&str])] = &[
    (
        "wanmpi",
        "Everything wanmpi lets a tool see and set.",
        &["wanmpi_engine", "wanmpi_peers", "wanmpi_wan", "wanmpi_collectives", "wanmpi_progress", "wanmpi_transports"],
    ),
    ("wanmpi_engine", "Matching and protocols: messages, their protocols, the queues.", &[]),
    ("wanmpi_peers", "Per peer (world rank): messages each way and the round trip.", &[]),
    ("wanmpi_wan", "Traffic between sites and the WAN window.", &[]),
    ("wanmpi_collectives", "Collective traffic that crossed sites.", &[]),
    ("wanmpi_progress", "How messages move while the program computes: the progress thread and spinning.", &[]),
    (
        "wanmpi_transports",
        "Which transport carried what, per transport.",
        &["wanmpi_transport_tcp", "wanmpi_transport_sctp", "wanmpi_transport_wamp", "wanmpi_transport_shm"],
    ),
    ("wanmpi_transport_tcp", "tcp: frames per peer and segments the kernel retransmitted.", &[]),
    ("wanmpi_transport_sctp", "sctp (usrsctp over UDP): frames per peer and DATA chunks sent again.", &[]),
    ("wanmpi_transport_wamp", "wamp (UDP): frames per peer, chunks resent, packets rebuilt by FEC.", &[]),
    ("wanmpi_transport_shm", "Shared memory between ranks of one host: frames per peer.", &[]),
];

/// The category of each control variable.
fn cvar_category(name: &str) -> &'static str {
    match name {
        "wanmpi_eager_limit" | "wanmpi_recv_credits" | "wanmpi_shm_cma_from" => "wanmpi_engine",
        "wanmpi_wan_window" | "wanmpi_wan_buffer" | "wanmpi_wan_peers" | "wanmpi_outage_limit" => "wanmpi_wan",
        "wanmpi_transport" => "wanmpi_transports",
        "wanmpi_wamp_fec" => "wanmpi_transport_wamp",
        "wanmpi_progress_thread" | "wanmpi_progress_interval_us" | "wanmpi_spin_rounds" => "wanmpi_progress",
        _ => "wanmpi",
    }
}

static CATEGORIES: LazyLock<Vec<Category>> = LazyLock::new(|| {
    let pos = |n: &str| LAYOUT.iter().position(|(m, _, _)| *m == n).map(|i| i as c_int);
    LAYOUT
        .iter()
        .map(|&(name, desc, subs)| Category {
            name,
            desc,
            cvars: (0..CVARS.len()).filter(|&i| cvar_category(CVARS[i].name) == name).map(|i| i as c_int).collect(),
            pvars: (0..PVARS.len()).filter(|&i| PVARS[i].category == name).map(|i| i as c_int).collect(),
            categories: subs.iter().filter_map(|s| pos(s)).collect(),
        })
        .collect()
});

fn category(i: c_int) -> TResult<&'static Category> {
    usize::try_from(i).ok().and_then(|i| CATEGORIES.get(i)).ok_or(code::INVALID_INDEX)
}

/// Copies up to `len` of `items` to `indices`.
fn copy(items: &[c_int], len: c_int, indices: *mut c_int) -> TResult<()> {
    let n = usize::try_from(len).map_err(|_| code::INVALID)?.min(items.len());
    if n == 0 {
        return Ok(());
    }
    if indices.is_null() {
        return Err(code::ERR_ARG);
    }
    // SAFETY: the caller's array holds `len` ints; n <= len.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), indices, n) };
    Ok(())
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_num(num: *mut c_int) -> c_int {
    entry(|_| {
        *out(num)? = CATEGORIES.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    entry(|_| {
        let c = category(cat_index)?;
        put_str(c.name, name, name_len);
        put_str(c.desc, desc, desc_len);
        put(num_cvars, c.cvars.len() as c_int);
        put(num_pvars, c.pvars.len() as c_int);
        put(num_categories, c.categories.len() as c_int);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int {
    entry(|_| {
        let name = in_str(name)?;
        let out = out(cat_index)?;
        *out = CATEGORIES.iter().position(|c| c.name == name).ok_or(code::INVALID_NAME)? as c_int;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    entry(|_| copy(&category(cat_index)?.cvars, len, indices))
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    entry(|_| copy(&category(cat_index)?.pvars, len, indices))
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    entry(|_| copy(&category(cat_index)?.categories, len, indices))
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int {
    entry(|_| {
        category(cat_index)?;
        *out(num_events)? = 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    entry(|_| copy(&category(cat_index)?.categories[..0], len, indices))
}

#[no_mangle]
pub extern "C" fn PMPI_T_category_changed(update_number: *mut c_int) -> c_int {
    entry(|_| {
        *out(update_number)? = 0;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::{cvar_category, CATEGORIES, LAYOUT};
    use crate::mpit::{cvars::CVARS, pvars::PVARS};

    #[test]
    fn every_variable_is_in_a_category_that_exists() {
        for v in CVARS {
            assert!(LAYOUT.iter().any(|(n, _, _)| *n == cvar_category(v.name)), "{}", v.name);
        }
        for v in PVARS.iter() {
            assert!(LAYOUT.iter().any(|(n, _, _)| *n == v.category), "{}", v.name);
        }
        let pvars: usize = CATEGORIES.iter().map(|c| c.pvars.len()).sum();
        assert_eq!(pvars, PVARS.len());
        assert_eq!(CATEGORIES[0].categories.len(), 6);
    }
}
