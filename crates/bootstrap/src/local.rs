//! An in-process key/value exchange: ranks are threads of one test process.

use crate::{BootstrapError, KeyValue};
use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};

pub struct LocalKv {
    rank: u32,
    size: u32,
    pending: Vec<(String, String)>,
    shared: Arc<(Mutex<HashMap<String, String>>, Barrier)>,
}

/// `n` connected in-process exchanges, one per rank (move each to its thread).
pub fn local_kv_world(n: u32) -> Vec<LocalKv> {
    let shared = Arc::new((Mutex::new(HashMap::new()), Barrier::new(n as usize)));
    (0..n).map(|rank| LocalKv { rank, size: n, pending: vec![], shared: shared.clone() }).collect()
}

impl KeyValue for LocalKv {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.pending.push((key.to_string(), value.to_string()));
        Ok(())
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        {
            let mut map = self.shared.0.lock().expect("local kv poisoned");
            map.extend(self.pending.drain(..));
        }
        self.shared.1.wait();
        Ok(())
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        let map = self.shared.0.lock().expect("local kv poisoned");
        map.get(key).cloned().ok_or_else(|| BootstrapError::Missing(key.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_visible_after_the_fence() {
        let handles: Vec<_> = local_kv_world(3)
            .into_iter()
            .map(|mut kv| {
                std::thread::spawn(move || {
                    kv.put(&format!("ep{}", kv.rank()), &format!("addr-{}", kv.rank())).unwrap();
                    kv.fence().unwrap();
                    (0..3).map(|r| kv.get(&format!("ep{r}")).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), vec!["addr-0", "addr-1", "addr-2"]);
        }
    }
}
