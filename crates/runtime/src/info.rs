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
