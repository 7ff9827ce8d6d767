//! A client transaction as the node admits it from the QUIC ingress: decode, signature
//! check (ZIP 215), then the mempool's offer, then a snapshot a leader would take. A
//! transaction the mempool keeps decodes; nothing panics. (A signature that verifies
//! proves nothing of the rest: ZIP 215 accepts the all-zero key's zero signature on any
//! message, crash-45ea9f88.)
#![no_main]

use dyno_node::mempool::{Admit, Mempool};
use dyno_txn::tx;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let decoded = tx::decode(data);
    let verified = tx::verify(data);
    let mut pool = Mempool::new(16);
    let admit = pool.offer_verified(data, true, Some(verified));
    if admit == Admit::Added {
        assert!(decoded.is_ok());
        assert!(pool.holds(data));
        assert_eq!(pool.snapshot(16), vec![data.to_vec()]);
    }
    // The same bytes relayed by a peer get the same verdict on their signature.
    let mut relayed = Mempool::new(16);
    let r = relayed.offer_relayed(vec![data.to_vec()]);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1 == Admit::Added, admit == Admit::Added);
});
