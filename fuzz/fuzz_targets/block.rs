//! A block body as a follower takes it from a peer: decode, then validation against a
//! small genesis. Bytes that decode are re-signed with the named leader's key (every
//! validator's key derives from the genesis), so validation goes past the seal to the
//! slot, leader, parent, PoH and replay checks a byzantine leader could reach. Nothing
//! may panic; a block that decodes encodes back to its bytes.
#![no_main]

use std::sync::{Arc, OnceLock};

use dyno_node::block::{Block, Header};
use dyno_node::chain::Chain;
use dyno_node::genesis::{Genesis, GenesisFile, Validator};
use ed25519_dalek::Signer;
use libfuzzer_sys::fuzz_target;

fn genesis() -> &'static Arc<Genesis> {
    static G: OnceLock<Arc<Genesis>> = OnceLock::new();
    G.get_or_init(|| {
        Arc::new(
            GenesisFile {
                network: "fuzz".into(),
                seed: 1,
                accounts: 8,
                balance: 1_000_000,
                slot_ms: 400,
                genesis_time_ms: 0,
                max_block_txs: 64,
                validators: vec![
                    Validator { id: "a".into(), stake: 1 },
                    Validator { id: "b".into(), stake: 1 },
                ],
            }
            .load(),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = Header::decode(data);
    let Ok(mut block) = Block::decode(data) else {
        return;
    };
    assert_eq!(block.encode(), data);
    let g = genesis();
    if let Some(key) = g.leader_key(&block.header.leader) {
        block.signature = key.sign(block.header.hash().as_bytes()).to_bytes();
    }
    let chain = Chain::new(g.clone());
    let _ = chain.check(block, u64::MAX);
});
