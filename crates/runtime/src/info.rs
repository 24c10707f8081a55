//! MPI_Info objects (MPI-3.1 §9): ordered string key/value pairs.

use wanmpi_engine::{error::err, ErrorClass, MpiResult};

/// Longest key (MPI_MAX_INFO_KEY, MPICH's value) and value (MPI_MAX_INFO_VAL).
pub const MAX_INFO_KEY: usize = 255;
pub const MAX_INFO_VAL: usize = 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pairs: Vec<(String, String)>,
}

impl Info {
    pub fn set(&mut self, key: &str, value: &str) -> MpiResult<()> {
        if key.is_empty() || key.len() > MAX_INFO_KEY {
            return err(ErrorClass::InfoKey, format!("info key of {} characters (allowed 1..={MAX_INFO_KEY})", key.len()));
        }
        if value.len() > MAX_INFO_VAL {
            return err(ErrorClass::InfoValue, format!("info value of {} characters (allowed up to {MAX_INFO_VAL})", value.len()));
        }
        match self.pairs.iter_mut().find(|(k, _)| k == key) {
            Some(p) => p.1 = value.to_string(),
            None => self.pairs.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    pub fn delete(&mut self, key: &str) -> MpiResult<()> {
        match self.pairs.iter().position(|(k, _)| k == key) {
            Some(i) => {
                self.pairs.remove(i);
                Ok(())
            }
            None => err(ErrorClass::InfoNokey, format!("info key {key:?} is not set")),
        }
    }
    pub fn nkeys(&self) -> usize {
        self.pairs.len()
    }
    pub fn nth_key(&self, n: usize) -> Option<&str> {
        self.pairs.get(n).map(|(k, _)| k.as_str())
    }
    /// A boolean hint: "true"/"false" (case-insensitive), else None.
    pub fn get_bool(&self, key: &str) -> Option<bool> {
        match self.get(key)?.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }
}

/// The MPI-4 info key that relaxes message ordering on a communicator.
pub const ALLOW_OVERTAKING: &str = "mpi_assert_allow_overtaking";

/// The communicator hints MPI-4.0 defines (§7.4.4), all boolean and
/// "false" by default. wanmpi acts on `mpi_assert_allow_overtaking` and
/// accepts the others (they promise what a program does not do).
pub const COMM_HINTS: [&str; 4] = ["mpi_assert_no_any_tag", "mpi_assert_no_any_source", "mpi_assert_exact_length", ALLOW_OVERTAKING];

/// The hints a communicator keeps when `new` is set over `old` (MPI-4.0
/// §7.4.4): the known keys with a boolean value in `new`, else as they
/// were; every other key is ignored, so MPI_Comm_get_info does not report
/// it.
pub(crate) fn comm_hints(old: &Info, new: &Info) -> Info {
    let mut out = Info::default();
    for k in COMM_HINTS {
        let v = new.get_bool(k).and(new.get(k)).or_else(|| old.get(k));
        if let Some(v) = v {
            // Keys and values of this table are short.
            let _ = out.set(k, v.trim());
        }
    }
    out
}

/// What MPI_Comm_get_info reports: the hints kept, and each known hint
/// not set at its default (MPI-4.0 §7.4.4: supported hints with defaults
/// are returned).
pub(crate) fn comm_hints_used(kept: &Info) -> Info {
    let mut out = Info::default();
    for k in COMM_HINTS {
        let _ = out.set(k, kept.get(k).unwrap_or("false"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn communicator_hints_keep_known_keys_only() {
        let mut user = Info::default();
        user.set("invalid_test_key", "true").unwrap();
        user.set(ALLOW_OVERTAKING, "true").unwrap();
        user.set("mpi_assert_no_any_tag", "perhaps").unwrap();
        let kept = comm_hints(&Info::default(), &user);
        assert_eq!(kept.nkeys(), 1);
        assert_eq!(kept.get_bool(ALLOW_OVERTAKING), Some(true));
        // A later set without the key keeps it; a new value replaces it.
        let mut next = Info::default();
        next.set("mpi_assert_exact_length", "false").unwrap();
        let kept = comm_hints(&kept, &next);
        assert_eq!((kept.get(ALLOW_OVERTAKING), kept.get("mpi_assert_exact_length")), (Some("true"), Some("false")));
        let used = comm_hints_used(&kept);
        assert_eq!(used.nkeys(), 4);
        assert_eq!(used.get("mpi_assert_no_any_source"), Some("false"));
        assert_eq!(used.get("invalid_test_key"), None);
    }
}
