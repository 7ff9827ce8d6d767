//! A peer frame's payload as the node loop decodes it (dyno-node's `Message`): headers,
//! fetch requests, blocks, relayed transactions, range requests and answers. Nothing
//! may panic, and whatever decodes encodes to bytes that decode to the same message.
#![no_main]

use dyno_node::block::Header;
use dyno_node::transport::Message;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(m) = Message::decode(data) else {
        return;
    };
    assert_eq!(Message::decode(&m.encode()).as_ref(), Some(&m));
    // What the loop does next with a header: decode it exactly.
    if let Message::Header(h) = &m {
        if let Ok(header) = Header::decode(h) {
            assert_eq!(&header.encode(), h);
        }
    }
});
