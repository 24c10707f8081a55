//! Any bytes as a shared-memory ring another rank wrote (its counters,
//! record headers and frames) and as the endpoint text a rank publishes:
//! the consumer never panics, never hands out a frame outside the ring and
//! never loops for ever; a parsed endpoint renders back to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_transport_shm::fuzzing::{drain_hostile_ring, parse_endpoint};

fuzz_target!(|data: &[u8]| {
    drain_hostile_ring(data);
    if let Ok(text) = std::str::from_utf8(data) {
        parse_endpoint(text);
    }
});
