//! The full memory barrier of the wake-up protocol (`transport.rs`): a
//! store, then a load of the other side's flag, which must not pass it.
//!
//! On x86-64 `fence(SeqCst)` is `mfence`, about 50 cycles on the AMD EPYC
//! VMs we measure on; a locked read-modify-write of the stack is the same
//! full barrier (locked instructions are not reordered with any load or
//! store: Intel SDM vol. 3A §9.2.3, AMD APM vol. 2 §7.4.2) at about 13
//! cycles. The shm path pays one per message on each side, so the
//! difference is a tenth of a one-byte message's latency on one host
//! (docs/benchmarks.md "One host"; the before/after: its section 29 at
//! commit 52d70dc). Elsewhere: `fence(SeqCst)`.

/// A full (StoreLoad) barrier, also a compiler barrier.
#[inline(always)]
pub(crate) fn full_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lock or` of zero into the word at the stack pointer changes
    // no memory (the red zone and the stack below rsp are ours) and only
    // the flags; the asm may read and write memory as far as the compiler
    // knows, so no access moves across it.
    unsafe {
        std::arch::asm!("lock or dword ptr [rsp], 0", options(nostack))
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}
