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
    /// (WANMPI_SHM_CMA_FROM; the default is measured, docs/benchmarks.md "One host").
    pub single_copy_from: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { eager_limit: 64 * 1024, recv_credits: true, single_copy_from: SINGLE_COPY_FROM }
    }
}

/// Default of `EngineConfig::single_copy_from`, where single copy is on
/// (docs/benchmarks.md "One host"): on a host with more ranks than cores it beat
/// the ring by about 15% at 1 and 4 MiB; with a core per rank the ring,
/// whose two copies run on both ranks' cores at once, was twice as fast at
/// every size, so the runtime then leaves single copy off unless asked.
pub const SINGLE_COPY_FROM: usize = 1 << 20;
