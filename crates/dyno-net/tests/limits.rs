//! What a peer can make a node hold is bounded: delivery times far ahead, bytes it does not
//! read, idle handshakes (which displace each other, never a peer that says hello); and a
//! peer expected to dial in that never does is named.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use dyno_net::frame::{self, Hello};
use dyno_net::{
    unix_ns, LinkShape, PeerConfig, PeerEvent, PeerEvents, PeerNet, PeerOptions, PeerSpec,
    RefuseReason,
};

const GENESIS: [u8; 32] = [0x22; 32];
const WAIT: Duration = Duration::from_secs(20);

fn cfg(id: &str) -> PeerConfig {
    PeerConfig {
        node_id: id.into(),
        genesis_hash: GENESIS,
        listen: "127.0.0.1:0".parse().unwrap(),
        max_frame: 1 << 20,
    }
}

/// A peer at an address nobody listens on.
fn absent(id: &str) -> PeerSpec {
    PeerSpec {
        id: id.into(),
        addr: "127.0.0.1:9".into(),
        shape: LinkShape::UNSHAPED,
    }
}

fn wait_for(rx: &PeerEvents, mut want: impl FnMut(&PeerEvent) -> bool) -> PeerEvent {
    loop {
        let e = rx.recv_timeout(WAIT).expect("no peer event in time");
        if want(&e) {
            return e;
        }
    }
}

/// The dialer's half of the handshake as `id`; Err when the node closed instead of
/// answering.
fn try_dial(addr: SocketAddr, id: &str) -> std::io::Result<TcpStream> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(WAIT))?;
    let hello = Hello {
        status: 0,
        genesis: GENESIS,
        node_id: id.into(),
    };
    frame::write_opening(&mut s, &hello)?;
    frame::read_preamble(&mut s).map_err(|_| std::io::ErrorKind::ConnectionReset)?;
    let reply = frame::read_hello(&mut s).map_err(|_| std::io::ErrorKind::ConnectionReset)?;
    assert_eq!(reply.status, 0, "handshake refused");
    Ok(s)
}

/// True once the remote closed the connection (read returns 0 or an error).
fn closed_by_remote(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

fn disconnect_reason(rx: &PeerEvents, peer: &str) -> String {
    match wait_for(rx, |e| matches!(e, PeerEvent::Disconnected { .. })) {
        PeerEvent::Disconnected { peer: p, reason } => {
            assert_eq!(p, peer);
            reason
        }
        _ => unreachable!(),
    }
}

/// The status of the hello a node answers a dial as `id` with (0: accepted).
fn hello_status(addr: SocketAddr, id: &str) -> u8 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let hello = Hello {
        status: 0,
        genesis: GENESIS,
        node_id: id.into(),
    };
    frame::write_opening(&mut s, &hello).unwrap();
    frame::read_preamble(&mut s).unwrap();
    frame::read_hello(&mut s).unwrap().status
}

#[test]
fn a_delivery_time_far_ahead_cuts_the_link_and_later_frames_are_not_held() {
    let opts = PeerOptions {
        ban_after_violation: Duration::from_millis(300),
        ..PeerOptions::default()
    };
    let (m, m_rx) = PeerNet::start_with(cfg("m"), vec![absent("a")], opts).unwrap();
    let mut s = try_dial(m.local_addr(), "a").unwrap();
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    std::io::Write::write_all(&mut s, &frame::encode_data(u64::MAX, b"held forever")).unwrap();
    std::io::Write::write_all(&mut s, &frame::encode_data(0, b"after it")).unwrap();
    let refused = wait_for(&m_rx, |e| matches!(e, PeerEvent::Refused { .. }));
    assert!(
        matches!(
            refused,
            PeerEvent::Refused {
                reason: RefuseReason::Protocol,
                ..
            }
        ),
        "{refused:?}"
    );
    let reason = disconnect_reason(&m_rx, "a");
    assert!(reason.starts_with("protocol: a frame asks"), "{reason}");
    assert!(closed_by_remote(&mut s));
    let c = m.counters();
    assert_eq!(c.refused(RefuseReason::Protocol), 1);
    assert_eq!(c.frames_in, 0, "the offending frame was taken in");
    // The peer that broke the protocol is refused for a while...
    assert_ne!(
        hello_status(m.local_addr(), "a"),
        0,
        "a banned peer was let in"
    );
    // Wait for the refusal to be counted (a node may count it after answering).
    let counted = Instant::now() + Duration::from_secs(10);
    while m.counters().refused(RefuseReason::Banned) == 0 && Instant::now() < counted {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(m.counters().refused(RefuseReason::Banned) >= 1);
    std::thread::sleep(Duration::from_millis(400));
    // ... and afterwards a delivery time within the bound is honoured on a new link.
    let mut s = try_dial(m.local_addr(), "a").unwrap();
    let due = unix_ns() + 20_000_000;
    std::io::Write::write_all(&mut s, &frame::encode_data(due, b"soon")).unwrap();
    match wait_for(&m_rx, |e| matches!(e, PeerEvent::Message { .. })) {
        PeerEvent::Message {
            payload,
            received_ns,
            ..
        } => {
            assert_eq!(payload, b"soon");
            assert!(received_ns >= due);
        }
        _ => unreachable!(),
    }
    m.shutdown();
}

#[test]
fn a_peer_that_does_not_read_is_cut_once_its_queue_is_full() {
    let opts = PeerOptions {
        max_queued_bytes: 1 << 20,
        ..PeerOptions::default()
    };
    let (m, m_rx) = PeerNet::start_with(cfg("m"), vec![absent("a")], opts).unwrap();
    let _silent = try_dial(m.local_addr(), "a").unwrap();
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    // 64 MiB at most: far more than the 1 MiB bound plus both sockets' buffers.
    let chunk = vec![7u8; 64 * 1024];
    let accepted = (0..1024).take_while(|_| m.send("a", chunk.clone())).count();
    assert!(
        accepted < 1024,
        "every send was queued to a peer that reads nothing"
    );
    assert!(!m.send("a", chunk.clone()), "a cut link still takes frames");
    let reason = disconnect_reason(&m_rx, "a");
    assert!(reason.starts_with("slow peer: "), "{reason}");
    assert_eq!(m.counters().slow_peers, 1);
    assert!(m.connected().is_empty());
    m.shutdown();
}

/// True once the node has closed `s` (end of stream or a reset, not a read timeout).
fn closed_by_node(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = [0u8; 16];
    match s.read(&mut buf) {
        Ok(0) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        Ok(n) => panic!("the node answered an idle connection with {n} bytes"),
    }
}

#[test]
fn past_the_handshake_limit_the_oldest_idle_connection_makes_room() {
    let opts = PeerOptions {
        max_handshakes: 2,
        ..PeerOptions::default()
    };
    let (m, m_rx) = PeerNet::start_with(cfg("m"), vec![absent("a")], opts).unwrap();
    // Two connections that never say hello hold both places...
    let mut idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(m.local_addr()).unwrap())
        .collect();
    // ...until a third comes: the oldest is closed to make room for it.
    let _third = TcpStream::connect(m.local_addr()).unwrap();
    assert!(
        closed_by_node(&mut idle[0]),
        "the oldest idle connection was kept"
    );
    assert_eq!(
        poll(|| m.counters().handshakes_shed, |&n| n >= 1),
        1,
        "one connection shed"
    );
    // A real peer gets in while the idle ones are still open.
    let _a = try_dial(m.local_addr(), "a").expect("a real peer was locked out");
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    m.shutdown();
}

#[test]
fn three_hundred_idle_connections_do_not_lock_out_a_peers_hello() {
    let (m, m_rx) =
        PeerNet::start_with(cfg("m"), vec![absent("a")], PeerOptions::default()).unwrap();
    // All from this one address, held open, never a byte: more than the node's places.
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(m.local_addr()).unwrap())
        .collect();
    let _a = try_dial(m.local_addr(), "a").expect("a real peer was locked out");
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    drop(idle);
    m.shutdown();
}

#[test]
fn a_connection_that_says_nothing_gives_its_place_back_on_its_own() {
    let (m, _rx) =
        PeerNet::start_with(cfg("m"), vec![absent("a")], PeerOptions::default()).unwrap();
    let mut silent = TcpStream::connect(m.local_addr()).unwrap();
    assert!(
        closed_by_node(&mut silent),
        "a silent connection was held open"
    );
    m.shutdown();
}

#[test]
fn a_smaller_peer_that_never_dials_is_named() {
    let opts = PeerOptions {
        dial_grace: Duration::from_millis(50),
        ..PeerOptions::default()
    };
    // "a" must dial m; m dials "z" itself, so only "a" is awaited.
    let (m, m_rx) = PeerNet::start_with(cfg("m"), vec![absent("a"), absent("z")], opts).unwrap();
    let waits = poll(|| m.awaiting_dial(), |w| !w.is_empty());
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].peer, "a");
    assert!(
        waits[0]
            .to_string()
            .starts_with("waiting for a to dial us for "),
        "{}",
        waits[0]
    );
    assert!(waits[0].to_string().contains("it must list this node"));
    assert_eq!(m.counters().awaiting_dial, 1);
    // Linked, it is no longer awaited; gone again, it is, once the grace has passed.
    let s = try_dial(m.local_addr(), "a").unwrap();
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    assert!(m.awaiting_dial().is_empty());
    drop(s);
    disconnect_reason(&m_rx, "a");
    let waits = poll(|| m.awaiting_dial(), |w| !w.is_empty());
    assert_eq!(waits[0].peer, "a");
    m.shutdown();
}

fn poll<T>(mut get: impl FnMut() -> T, mut done: impl FnMut(&T) -> bool) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        let v = get();
        if done(&v) || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The scheduling policy (0 = SCHED_OTHER, 1 = SCHED_FIFO) of this process's thread
/// named `comm`.
#[cfg(target_os = "linux")]
fn policy_of_thread(comm: &str) -> Option<u32> {
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if name.trim() == comm {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // Fields after the ")" closing the name start at field 3; policy is field 41.
            let rest = &stat[stat.rfind(')')? + 1..];
            return rest.split_whitespace().nth(41 - 3)?.parse().ok();
        }
    }
    None
}

#[test]
#[cfg(target_os = "linux")]
fn the_shaping_timer_runs_in_the_normal_class_by_default() {
    // A unique id: the network's I/O thread (the timer is a task on it) is "net-io-rtq".
    let (m, _rx) = PeerNet::start(cfg("rtq"), vec![absent("a")]).unwrap();
    // The thread sets its class as it starts: give it the time to (wrongly) do so.
    let policy = poll(|| policy_of_thread("net-io-rtq"), |p| p.is_some());
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(policy, Some(0));
    assert_eq!(policy_of_thread("net-io-rtq"), Some(0));
    m.shutdown();
}

#[test]
fn a_peer_sending_faster_than_the_node_takes_is_paused_at_its_inbound_budget() {
    let opts = PeerOptions {
        max_inbound_bytes: 64 << 10,
        ..PeerOptions::default()
    };
    let (m, m_rx) = PeerNet::start_with(cfg("m"), vec![absent("a")], opts).unwrap();
    let mut s = try_dial(m.local_addr(), "a").unwrap();
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    // 4 MiB in 1 KiB frames; nobody takes the events meanwhile.
    let writer = std::thread::spawn(move || {
        s.set_write_timeout(Some(WAIT)).unwrap();
        for _ in 0..4096 {
            if std::io::Write::write_all(&mut s, &frame::encode_data(0, &[7; 1024])).is_err() {
                break;
            }
        }
        s
    });
    let t0 = Instant::now();
    while m.counters().inbound_paused == 0 && t0.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let held = m.counters().bytes_in;
    assert!(m.counters().inbound_paused >= 1, "the reader never paused");
    assert!(
        held <= (64 << 10) + 1024,
        "{held} bytes read ahead of a node that took none (budget 64 KiB)"
    );
    // Taking the messages lets the rest in, every one of them.
    let mut got = 0;
    while got < 4096 {
        if let PeerEvent::Message { payload, .. } = m_rx.recv_timeout(WAIT).unwrap() {
            assert_eq!(payload.len(), 1024);
            got += 1;
        }
    }
    drop(writer.join().unwrap());
    m.shutdown();
}

#[test]
fn a_peer_cut_for_misbehaving_is_refused_until_its_ban_ends() {
    let (m, m_rx) = PeerNet::start(cfg("m"), vec![absent("a")]).unwrap();
    let mut s = try_dial(m.local_addr(), "a").unwrap();
    wait_for(&m_rx, |e| matches!(e, PeerEvent::Connected { .. }));
    assert!(m.disconnect(
        "a",
        "64 messages that are not the protocol",
        Duration::from_millis(300)
    ));
    let reason = disconnect_reason(&m_rx, "a");
    assert!(
        reason.starts_with("misbehaving: 64 messages that are not the protocol; refused for 0.3 s"),
        "{reason}"
    );
    assert!(closed_by_remote(&mut s));
    assert_eq!(
        hello_status(m.local_addr(), "a"),
        10,
        "not refused as banned"
    );
    assert_eq!(m.counters().misbehaving_cut, 1);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        hello_status(m.local_addr(), "a"),
        0,
        "still refused after the ban"
    );
    m.shutdown();
}
