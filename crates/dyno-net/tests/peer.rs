//! Peer network on loopback: handshake, refusals by reason, order, shaping, shutdown.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use dyno_net::frame::{self, Hello};
use dyno_net::{
    unix_ns, LinkShape, PeerConfig, PeerEvent, PeerEvents, PeerNet, PeerSpec, RefuseReason,
};

const GENESIS: [u8; 32] = [0x11; 32];
const WAIT: Duration = Duration::from_secs(20);

fn cfg(id: &str, genesis: [u8; 32]) -> PeerConfig {
    PeerConfig {
        node_id: id.into(),
        genesis_hash: genesis,
        listen: "127.0.0.1:0".parse().unwrap(),
        max_frame: 64 * 1024,
    }
}

fn spec(id: &str, addr: SocketAddr) -> PeerSpec {
    PeerSpec {
        id: id.into(),
        addr: addr.to_string(),
        shape: LinkShape::UNSHAPED,
    }
}

/// An address nobody listens on (the accepting side never dials it).
fn nowhere() -> SocketAddr {
    "127.0.0.1:9".parse().unwrap()
}

fn next(rx: &PeerEvents) -> PeerEvent {
    rx.recv_timeout(WAIT).expect("no peer event in time")
}

fn wait_for(rx: &PeerEvents, mut want: impl FnMut(&PeerEvent) -> bool) -> PeerEvent {
    loop {
        let e = next(rx);
        if want(&e) {
            return e;
        }
    }
}

fn message(rx: &PeerEvents) -> (String, Vec<u8>, u64) {
    match wait_for(rx, |e| matches!(e, PeerEvent::Message { .. })) {
        PeerEvent::Message {
            peer,
            payload,
            received_ns,
        } => (peer, payload, received_ns),
        _ => unreachable!(),
    }
}

/// A hub "m" that accepts every listed peer (all listed ids are smaller, so they dial it).
fn hub(listed: &[&str]) -> (PeerNet, PeerEvents) {
    let peers = listed.iter().map(|id| spec(id, nowhere())).collect();
    PeerNet::start(cfg("m", GENESIS), peers).unwrap()
}

#[test]
fn handshake_links_both_ways_and_keeps_order() {
    let (m, m_rx) = hub(&["a"]);
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![spec("m", m.local_addr())]).unwrap();
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    assert_eq!(next(&m_rx), PeerEvent::Connected { peer: "a".into() });
    assert_eq!(a.connected(), vec!["m".to_string()]);
    assert_eq!(m.connected(), vec!["a".to_string()]);

    for i in 0u32..500 {
        assert!(a.send("m", i.to_be_bytes().to_vec()));
    }
    assert!(m.send("a", b"reply".to_vec()));
    for i in 0u32..500 {
        let (peer, payload, _) = message(&m_rx);
        assert_eq!((peer.as_str(), payload), ("a", i.to_be_bytes().to_vec()));
    }
    assert_eq!(message(&a_rx).1, b"reply");
    assert!(!a.send("nobody", b"x".to_vec()));
    let c = m.counters();
    assert_eq!((c.frames_in, c.bytes_in, c.refused_total()), (500, 2000, 0));
    a.shutdown();
    let e = wait_for(&m_rx, |e| matches!(e, PeerEvent::Disconnected { .. }));
    assert!(matches!(e, PeerEvent::Disconnected { peer, .. } if peer == "a"));
    assert_eq!(m.counters().disconnects, 1);
    m.shutdown();
}

#[test]
fn wrong_genesis_is_refused_while_a_good_peer_keeps_working() {
    let (m, m_rx) = hub(&["a", "b"]);
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![spec("m", m.local_addr())]).unwrap();
    let (evil, evil_rx) =
        PeerNet::start(cfg("b", [0x22; 32]), vec![spec("m", m.local_addr())]).unwrap();
    let refused = wait_for(&m_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        refused,
        PeerEvent::Refused {
            reason: RefuseReason::WrongGenesis,
            ..
        }
    ));
    let theirs = wait_for(&evil_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        theirs,
        PeerEvent::Refused {
            reason: RefuseReason::WrongGenesis,
            ..
        }
    ));
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    assert!(a.send("m", b"still here".to_vec()));
    assert_eq!(message(&m_rx).1, b"still here");
    assert!(m.counters().refused(RefuseReason::WrongGenesis) >= 1);
    assert_eq!(m.connected(), vec!["a".to_string()]);
    assert!(evil.connected().is_empty());
    evil.shutdown();
    a.shutdown();
    m.shutdown();
}

/// Opens a raw connection and does the dialer's half of the handshake as `id`.
fn raw_dial(addr: SocketAddr, id: &str, genesis: [u8; 32]) -> (TcpStream, Hello) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let hello = Hello {
        status: 0,
        genesis,
        node_id: id.into(),
    };
    frame::write_opening(&mut s, &hello).unwrap();
    frame::read_preamble(&mut s).unwrap();
    let reply = frame::read_hello(&mut s).unwrap();
    (s, reply)
}

/// True once the remote closed the connection (read returns 0 or an error).
fn closed_by_remote(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

#[test]
fn garbage_and_oversized_frames_are_refused_and_counted() {
    let (m, m_rx) = hub(&["a"]);
    let mut junk = TcpStream::connect(m.local_addr()).unwrap();
    junk.set_read_timeout(Some(WAIT)).unwrap();
    junk.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert!(closed_by_remote(&mut junk));
    let e = wait_for(&m_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        e,
        PeerEvent::Refused {
            reason: RefuseReason::Garbage,
            ..
        }
    ));

    // A listed peer that, once linked, sends a frame longer than max_frame.
    let (mut s, reply) = raw_dial(m.local_addr(), "a", GENESIS);
    assert_eq!((reply.status, reply.node_id.as_str()), (0, "m"));
    assert_eq!(next(&m_rx), PeerEvent::Connected { peer: "a".into() });
    s.write_all(&frame::encode_data(0, b"fine")).unwrap();
    assert_eq!(message(&m_rx).1, b"fine");
    s.write_all(&(10_000_000u32).to_be_bytes()).unwrap();
    let e = wait_for(&m_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        e,
        PeerEvent::Refused {
            reason: RefuseReason::Oversized,
            ..
        }
    ));
    let e = next(&m_rx);
    assert!(
        matches!(e, PeerEvent::Disconnected { ref peer, .. } if peer == "a"),
        "{e:?}"
    );
    assert!(closed_by_remote(&mut s));

    let c = m.counters();
    assert_eq!(c.refused(RefuseReason::Garbage), 1);
    assert_eq!(c.refused(RefuseReason::Oversized), 1);
    assert!(m.connected().is_empty());
    // The node refuses to send what its peers would refuse.
    let (a, _a_rx) = PeerNet::start(cfg("a", GENESIS), vec![spec("m", m.local_addr())]).unwrap();
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    assert!(!a.send("m", vec![0; 64 * 1024 + 1]));
    assert_eq!(a.counters().send_oversized, 1);
    a.shutdown();
    m.shutdown();
}

#[test]
fn unknown_node_id_is_refused_with_its_reason() {
    let (m, m_rx) = hub(&["a"]);
    let (mut s, reply) = raw_dial(m.local_addr(), "stranger", GENESIS);
    assert_ne!(reply.status, 0);
    assert!(closed_by_remote(&mut s));
    let e = wait_for(&m_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        e,
        PeerEvent::Refused {
            reason: RefuseReason::UnknownPeer,
            ..
        }
    ));
    assert_eq!(m.counters().refused(RefuseReason::UnknownPeer), 1);
    m.shutdown();
}

#[test]
fn shaping_delivers_no_earlier_than_latency_and_bandwidth_allow() {
    let shape = LinkShape {
        latency: Duration::from_millis(30),
        bandwidth_bps: Some(8_000_000), // one byte per microsecond
    };
    let (m, m_rx) = hub(&["a"]);
    let mut to_m = spec("m", m.local_addr());
    to_m.shape = shape;
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![to_m]).unwrap();
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    let size = 10_000;
    let on_wire_ns = (size + frame::DATA_OVERHEAD) as u64 * 1_000;
    let t0 = unix_ns();
    let due: Vec<u64> = (0..10u8)
        .map(|i| a.send_scheduled("m", vec![i; size]).unwrap())
        .collect();
    for (i, due) in due.into_iter().enumerate() {
        let (_, payload, at) = message(&m_rx);
        assert_eq!(payload[0], i as u8);
        let earliest = t0 + (i as u64 + 1) * on_wire_ns + 30_000_000;
        assert!(
            due >= earliest,
            "frame {i} scheduled {} ns early",
            earliest - due
        );
        assert!(
            at >= due,
            "frame {i} delivered {} ns before its time",
            due - at
        );
    }
    a.shutdown();
    m.shutdown();
}

fn net_threads_named(tag: &str) -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
            if comm.contains(tag) {
                names.push(comm.trim().to_string());
            }
        }
    }
    names
}

#[test]
#[cfg(target_os = "linux")]
fn shutdown_joins_every_thread() {
    // Ids unique to this test so other tests' threads do not count.
    let (y, y_rx) = PeerNet::start(cfg("sdy", GENESIS), vec![spec("sdx", nowhere())]).unwrap();
    let peers = vec![spec("sdy", y.local_addr()), spec("sdz", nowhere())];
    let (x, x_rx) = PeerNet::start(cfg("sdx", GENESIS), peers).unwrap();
    assert_eq!(next(&x_rx), PeerEvent::Connected { peer: "sdy".into() });
    assert_eq!(next(&y_rx), PeerEvent::Connected { peer: "sdx".into() });
    assert!(x.send("sdy", vec![1; 100]));
    assert_eq!(message(&y_rx).1, vec![1; 100]);
    // Acceptor, timer, writer and reader on each side, and x's dialers (one linked, one
    // backing off against an address nobody listens on) are tasks on one I/O thread per
    // network: the thread count does not grow with the links.
    let mut threads = net_threads_named("sd");
    threads.sort();
    assert_eq!(threads, ["net-io-sdx", "net-io-sdy"]);
    let addr = y.local_addr();
    x.shutdown();
    y.shutdown();
    assert_eq!(net_threads_named("sd"), Vec::<String>::new());
    // The listener is closed too: its port can be bound again.
    std::net::TcpListener::bind(addr).unwrap();
}

#[test]
fn another_protocol_version_is_refused_as_bad_version() {
    let (m, m_rx) = hub(&["a"]);
    let mut s = TcpStream::connect(m.local_addr()).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut opening = frame::preamble();
    opening[9] = opening[9].wrapping_add(1);
    s.write_all(&opening).unwrap();
    assert!(closed_by_remote(&mut s));
    let e = wait_for(&m_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        e,
        PeerEvent::Refused {
            reason: RefuseReason::BadVersion,
            ..
        }
    ));
    m.shutdown();
}

#[test]
fn an_address_answering_with_another_id_is_refused_as_wrong_peer() {
    // "n" accepts "a", but a's list says the node at that address is "m".
    let (n, _n_rx) = PeerNet::start(cfg("n", GENESIS), vec![spec("a", nowhere())]).unwrap();
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![spec("m", n.local_addr())]).unwrap();
    let e = wait_for(&a_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(matches!(
        e,
        PeerEvent::Refused {
            reason: RefuseReason::WrongPeer,
            ..
        }
    ));
    assert!(a.connected().is_empty());
    a.shutdown();
    n.shutdown();
}

#[test]
fn a_pair_listing_each_other_makes_one_link_and_survives_a_restart() {
    let (m, m_rx) = hub(&["a"]);
    let m_addr = m.local_addr();
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![spec("m", m_addr)]).unwrap();
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    assert_eq!(next(&m_rx), PeerEvent::Connected { peer: "a".into() });
    // m restarts on the same address, now listing a by its real address (both list each
    // other): a redials, and still exactly one link exists.
    m.shutdown();
    let e = next(&a_rx);
    assert!(
        matches!(e, PeerEvent::Disconnected { ref peer, .. } if peer == "m"),
        "{e:?}"
    );
    let mut m_cfg = cfg("m", GENESIS);
    m_cfg.listen = m_addr;
    let (m2, m2_rx) = PeerNet::start(m_cfg, vec![spec("a", a.local_addr())]).unwrap();
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    assert_eq!(next(&m2_rx), PeerEvent::Connected { peer: "a".into() });
    assert!(m2.send("a", b"after restart".to_vec()));
    assert_eq!(message(&a_rx).1, b"after restart");
    assert_eq!(a.connected(), vec!["m".to_string()]);
    assert_eq!(m2.connected(), vec!["a".to_string()]);
    assert_eq!(m2.counters().disconnects, 0);
    a.shutdown();
    m2.shutdown();
}

#[test]
fn a_peer_named_by_host_name_is_resolved_when_dialed() {
    let (m, m_rx) = hub(&["a"]);
    let named = PeerSpec {
        id: "m".into(),
        addr: format!("localhost:{}", m.local_addr().port()),
        shape: LinkShape::UNSHAPED,
    };
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![named]).unwrap();
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    assert_eq!(next(&m_rx), PeerEvent::Connected { peer: "a".into() });
    assert!(a.send("m", b"by name".to_vec()));
    assert_eq!(message(&m_rx).1, b"by name");
    a.shutdown();
    m.shutdown();
}

#[test]
fn a_cut_link_carries_nothing_until_the_fault_clears_and_latency_adds_up() {
    let (m, m_rx) = hub(&["a"]);
    let (a, a_rx) = PeerNet::start(cfg("a", GENESIS), vec![spec("m", m.local_addr())]).unwrap();
    assert_eq!(next(&a_rx), PeerEvent::Connected { peer: "m".into() });
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    a.set_fault(
        "m",
        dyno_net::LinkFault {
            blocked: true,
            ..Default::default()
        },
    );
    for i in 0u32..10 {
        // A cut wire swallows what is sent; the sender cannot tell.
        assert!(a.send("m", i.to_be_bytes().to_vec()));
    }
    assert_eq!(a.counters().fault_dropped, 10);
    let extra = Duration::from_millis(30);
    a.set_fault(
        "m",
        dyno_net::LinkFault {
            extra_latency: extra,
            ..Default::default()
        },
    );
    let sent_ns = unix_ns();
    assert!(a.send("m", b"after".to_vec()));
    // The first message through is the one sent after the cut, no earlier than its
    // extra latency (the link itself is unshaped).
    let (_, payload, received_ns) = message(&m_rx);
    assert_eq!(payload, b"after");
    assert!(received_ns >= sent_ns + extra.as_nanos() as u64);
    a.set_fault("m", dyno_net::LinkFault::default());
    assert!(a.send("m", b"clear".to_vec()));
    assert_eq!(message(&m_rx).1, b"clear");
    assert_eq!(a.counters().fault_dropped, 10);
    a.shutdown();
    m.shutdown();
}
