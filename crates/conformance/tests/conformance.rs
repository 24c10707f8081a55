//! The conformance suite: MPI rules checked by real multi-process programs
//! under `mpirun`, over every transport this build has. Each program asserts
//! internally and prints `PASS <name> on <n> ranks`.

mod harness;
use harness::pass;

#[test]
fn order_per_source_tag_and_context() {
    pass(env!("CARGO_BIN_EXE_order"), "order", &[2, 3, 4], &[]);
}

#[test]
fn order_with_the_progress_thread() {
    pass(env!("CARGO_BIN_EXE_order"), "order", &[3], &[("WANMPI_PROGRESS_THREAD", "1")]);
}

#[test]
fn relaxed_ordering_with_allow_overtaking() {
    pass(env!("CARGO_BIN_EXE_overtaking"), "overtaking", &[2, 3], &[]);
}

#[test]
fn unexpected_and_expected_messages() {
    pass(env!("CARGO_BIN_EXE_unexpected"), "unexpected", &[2, 3], &[]);
}

#[test]
fn eager_rendezvous_boundaries_and_64_mib() {
    pass(env!("CARGO_BIN_EXE_sizes"), "sizes", &[2], &[]);
}

#[test]
fn small_eager_limit_and_no_receive_credits() {
    pass(env!("CARGO_BIN_EXE_sizes"), "sizes", &[2], &[("WANMPI_EAGER_LIMIT", "1024"), ("WANMPI_RECV_CREDITS", "0"), ("CONFORMANCE_BIG", "5000000")]);
}

#[test]
fn synchronous_send_waits_for_the_match() {
    pass(env!("CARGO_BIN_EXE_ssend"), "ssend", &[2], &[]);
}

#[test]
fn truncation_error_and_recovery() {
    pass(env!("CARGO_BIN_EXE_truncate"), "truncate", &[2], &[]);
}

#[test]
fn probe_iprobe_mprobe() {
    pass(env!("CARGO_BIN_EXE_probe"), "probe", &[2, 4], &[]);
}

#[test]
fn cancel_pending_receive() {
    pass(env!("CARGO_BIN_EXE_cancel"), "cancel", &[2], &[]);
}

#[test]
fn waitany_waitsome_testall_mixed() {
    pass(env!("CARGO_BIN_EXE_waitmix"), "waitmix", &[2, 3], &[]);
}

#[test]
fn simultaneous_long_messages_both_ways() {
    pass(env!("CARGO_BIN_EXE_race"), "race", &[2], &[]);
    pass(env!("CARGO_BIN_EXE_race"), "race", &[2], &[("WANMPI_PROGRESS_THREAD", "1")]);
}

#[test]
fn collectives_against_references() {
    pass(env!("CARGO_BIN_EXE_collectives"), "collectives", &[1, 2, 3, 4, 7, 8], &[]);
}

#[test]
fn nonblocking_collectives_outstanding_together() {
    pass(env!("CARGO_BIN_EXE_nbcoll"), "nbcoll", &[1, 2, 3, 5], &[]);
}

#[test]
fn nonblocking_collectives_with_the_progress_thread() {
    pass(env!("CARGO_BIN_EXE_nbcoll"), "nbcoll", &[3], &[("WANMPI_PROGRESS_THREAD", "1")]);
}

#[test]
fn communicators_split_dup_create_inter() {
    pass(env!("CARGO_BIN_EXE_comms"), "comms", &[1, 2, 3, 4, 5], &[]);
}

#[test]
fn error_classes_for_bad_arguments() {
    pass(env!("CARGO_BIN_EXE_errors"), "errors", &[2], &[]);
}

/// The WAN window forced on every peer (near ones too), with a small window
/// so that long messages also overflow it: the rules hold whichever of
/// eager, credited, windowed and rendezvous a message takes.
const WAN_WINDOW_ON: &[(&str, &str)] = &[("WANMPI_WAN_PEERS", "all"), ("WANMPI_WAN_WINDOW", "400000")];

#[test]
fn wan_window_keeps_order_matching_and_sizes() {
    for (prog, name) in [
        (env!("CARGO_BIN_EXE_order"), "order"),
        (env!("CARGO_BIN_EXE_unexpected"), "unexpected"),
        (env!("CARGO_BIN_EXE_sizes"), "sizes"),
        (env!("CARGO_BIN_EXE_probe"), "probe"),
    ] {
        pass(prog, name, &[2, 3], WAN_WINDOW_ON);
    }
}

#[test]
fn wan_window_keeps_synchronous_sends_and_truncation() {
    pass(env!("CARGO_BIN_EXE_ssend"), "ssend", &[2], WAN_WINDOW_ON);
    pass(env!("CARGO_BIN_EXE_truncate"), "truncate", &[2], WAN_WINDOW_ON);
}
