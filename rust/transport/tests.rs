use super::*;
use std::time::Instant;

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn recv_all(t: &UdpTransport, want: usize) -> Vec<(Vec<u8>, RecvMeta)> {
    let mut batch = RecvBatch::new();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < want && Instant::now() < deadline {
        if t.recv_batch(&mut batch).expect("recv") == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        got.extend(batch.iter().map(|(d, m)| (d.to_vec(), *m)));
    }
    got
}

#[test]
fn batches_keep_order_sources_and_kernel_times() {
    let rx = UdpTransport::bind(loopback(), 10).expect("bind");
    let tx = UdpSocket::bind(loopback()).expect("peer");
    for i in 0..150u8 {
        tx.send_to(&[i; 20], rx.local_addr()).expect("send");
    }
    std::thread::sleep(Duration::from_millis(30));
    let got = recv_all(&rx, 150);
    assert_eq!(got.len(), 150);
    for (i, (data, meta)) in got.iter().enumerate() {
        assert_eq!(data, &vec![i as u8; 20]);
        assert_eq!(meta.from, tx.local_addr().expect("addr"));
        assert!(!meta.truncated);
        // Sent 30 ms before the read: the kernel's stamp says so.
        let age = meta.age.expect("kernel timestamp");
        assert!(age >= Duration::from_millis(25), "{age:?}");
    }
}

#[test]
fn long_datagrams_are_reported_truncated() {
    let rx = UdpTransport::bind(loopback(), 1).expect("bind");
    let tx = UdpSocket::bind(loopback()).expect("peer");
    tx.send_to(&vec![7u8; SLOT + 100], rx.local_addr())
        .expect("send");
    let got = recv_all(&rx, 1);
    assert_eq!(got.len(), 1);
    assert!(got[0].1.truncated);
    assert_eq!(got[0].0.len(), SLOT);
}

fn send_and_check(gso: bool) {
    let tx = UdpTransport::bind(loopback(), 1).expect("bind");
    tx.set_gso(gso);
    let peers: Vec<UdpSocket> = (0..3)
        .map(|_| UdpSocket::bind(loopback()).expect("peer"))
        .collect();
    let body = vec![0xABu8; 160];
    let heads: Vec<[u8; 4]> = (0..300u16)
        .map(|i| {
            let b = i.to_be_bytes();
            [b[0], b[1], 0, 0]
        })
        .collect();
    // Runs to one address (GSO material), then alternating addresses, then a short one.
    let mut out = Vec::new();
    for (i, h) in heads.iter().enumerate() {
        let p = if i < 200 { 0 } else { 1 + i % 2 };
        out.push(OutDatagram {
            to: peers[p].local_addr().expect("addr"),
            head: h,
            body: if i == 299 { &body[..10] } else { &body },
        });
    }
    let report = tx.send_batch(&out);
    assert_eq!(report.sent, 300);
    assert_eq!(report.failed, 0);
    assert_eq!(report.bytes, 299 * 164 + 14);
    for p in &peers {
        p.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
    }
    let mut buf = [0u8; 2048];
    for (i, d) in out.iter().enumerate() {
        let p = if i < 200 { 0 } else { 1 + i % 2 };
        let (n, from) = peers[p].recv_from(&mut buf).expect("datagram");
        assert_eq!(from, tx.local_addr());
        assert_eq!(n, d.len(), "datagram {i}");
        assert_eq!(&buf[..4], d.head);
        assert_eq!(&buf[4..n], d.body);
    }
    if gso && tx.stats().gso {
        assert!(report.calls <= 3, "{report:?}");
    }
}

#[test]
fn send_batch_gathers_heads_and_shared_bodies() {
    send_and_check(false);
}

#[test]
fn send_batch_with_gso_splits_into_the_same_datagrams() {
    send_and_check(true);
}

#[test]
fn buffers_are_sized_for_the_legs() {
    let t = UdpTransport::bind(loopback(), 2000).expect("bind");
    let s = t.stats();
    // Granted in full with CAP_NET_ADMIN, else up to net.core.rmem_max: never below the
    // default.
    assert!(s.rcvbuf >= MIN_BUFFER as u64, "{s:?}");
    assert!(s.sndbuf >= MIN_BUFFER as u64, "{s:?}");
}

#[test]
fn kernel_drops_are_counted() {
    let rx = UdpTransport::bind(loopback(), 0).expect("bind");
    let fd = rx.poll_fd();
    // Shrink the buffer so a burst overflows it.
    sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 4096).expect("rcvbuf");
    let tx = UdpSocket::bind(loopback()).expect("peer");
    for _ in 0..200 {
        let _ = tx.send_to(&[1u8; 500], rx.local_addr());
    }
    // One more after the overflow carries the drop count.
    let got = recv_all(&rx, 1);
    assert!(!got.is_empty());
    std::thread::sleep(Duration::from_millis(5));
    let _ = recv_all(&rx, 200);
    tx.send_to(&[2u8; 10], rx.local_addr()).expect("send");
    let _ = recv_all(&rx, 1);
    assert!(rx.stats().kernel_drops > 0, "{:?}", rx.stats());
}
