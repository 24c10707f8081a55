//! The express receive's way in through a composite: a frame is offered
//! only when it is next in its channel's order, and one taken that way
//! leaves the order state right for `poll_recv`.

use wanmpi_transport::{Incoming, SendStatus, Transport};
use wanmpi_transport_composite::{Composite, PerPeerRoute, Reach};
use wanmpi_transport_shm::{setup, ShmOptions};

fn pair() -> (Composite, Composite) {
    let wrap = |mut kv: wanmpi_bootstrap::LocalKv| {
        let shm = setup(&mut kv, &[0, 1], &ShmOptions::default()).expect("shm setup");
        let route = PerPeerRoute::new(vec![Reach::Fixed(0, "same host"); 2]);
        Composite::new("test", vec![Box::new(shm)], Box::new(route)).expect("composite")
    };
    let mut kvs = wanmpi_bootstrap::local_kv_world(2);
    let kv1 = kvs.pop().expect("rank 1");
    let h = std::thread::spawn(move || wrap(kv1));
    let a = wrap(kvs.pop().expect("rank 0"));
    (a, h.join().expect("rank 1"))
}

#[test]
fn frames_are_taken_in_channel_order_and_poll_recv_goes_on_from_there() {
    let (mut a, mut b) = pair();
    for i in 0..4u8 {
        assert_eq!(a.try_send(1, 0, &[&[i; 3]]).unwrap(), SendStatus::Sent);
    }
    assert_eq!(b.take_next_from(0, &mut |f| f == [0; 3]), Some(true));
    assert_eq!(b.take_next_from(0, &mut |f| f == [1; 3]), Some(true));
    assert_eq!(b.take_next_from(0, &mut |_| false), Some(false));
    let mut rest = vec![];
    b.poll_recv(&mut |ev| {
        if let Incoming::Frame { bytes, .. } = ev {
            rest.push(bytes[0]);
        }
    })
    .unwrap();
    assert_eq!(rest, vec![2, 3], "nothing lost, nothing twice");
    assert_eq!(b.bad_frames, 0);
    assert_eq!(b.take_next_from(1, &mut |_| true), None, "itself: not offered");
}
