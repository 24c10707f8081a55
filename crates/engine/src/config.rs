/// Engine options. Every field has a documented default and an environment
/// variable read by the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Messages up to this many bytes go eagerly (WANMPI_EAGER_LIMIT, default
    /// 64 KiB like LAM and the papers).
    pub eager_limit: usize,
    /// A receiver announces posted receives larger than the eager limit to
    /// their source so the message can come without a rendezvous round trip
    /// (WANMPI_RECV_CREDITS, default on).
    pub recv_credits: bool,
    /// Long messages of at least this many bytes to a process of this
    /// host that the engine may read from (`Engine::set_local_read`) go by
    /// one copy: the receiver reads them out of the sender's memory
    /// (WANMPI_SHM_CMA_FROM; the default is measured, docs/benchmarks.md 36).
    pub single_copy_from: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { eager_limit: 64 * 1024, recv_credits: true, single_copy_from: SINGLE_COPY_FROM }
    }
}

/// Default of `EngineConfig::single_copy_from`. Measured on a pair of
/// ranks (docs/benchmarks.md 36): below 4 MiB two copies through the shm
/// ring, pipelined over both ranks' cores, were as fast or faster than one
/// `process_vm_readv` (whose page pinning costs about as much as a copy);
/// from 4 MiB they tie, and one copy leaves the sender's core and the
/// ring free.
pub const SINGLE_COPY_FROM: usize = 4 << 20;
