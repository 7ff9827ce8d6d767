//! Transaction execution: the reference node's bank executing a block of transfers.
//!
//! The build study timed Substrate's `benchmark extrinsic --pallet system --extrinsic
//! remark`; this is dyno's equivalent, the third kind of score beside hashing and
//! signature checks. It times the same kernel the pipeline's bank tiles run (decode,
//! account checks, fee, debit, credit); signatures are made before timing and not
//! verified here, since verification has metrics of its own.

use super::{Benchmark, Context, Execution};
use crate::harness::Workload;
use crate::{HwError, MetricId};
use dyno_txn::bank::{self, AccountStore, DEFAULT_ACCOUNTS, DEFAULT_BALANCE};
use dyno_txn::tx;
use std::hint::black_box;

/// Transfers per timed iteration: one block.
const BLOCK: usize = 1024;

/// Executes a block of signed transfers among the default genesis accounts.
pub struct TransferExecute;

/// Working state of [`TransferExecute`].
pub struct ExecWorkload {
    store: AccountStore,
    block: Vec<Vec<u8>>,
}

impl Benchmark for TransferExecute {
    fn id(&self) -> MetricId {
        MetricId::TransferExecute
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        // Balances of 10^12 with transfers of at most 100 never run out, so every
        // iteration times successful transfers, not the failure path.
        let genesis = bank::fund_initial_accounts(DEFAULT_ACCOUNTS, DEFAULT_BALANCE, 1);
        let block = bank::transfer_block(&genesis, BLOCK, 42);
        Ok(Box::new(ExecWorkload {
            store: AccountStore::new(&genesis),
            block,
        }))
    }
    /// The harness counts transfers per second; the metric is the time per transfer.
    fn score(&self, rate: f64) -> f64 {
        1e9 / rate
    }
}

impl Workload for ExecWorkload {
    fn work_per_iteration(&self) -> f64 {
        BLOCK as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        let mut fees = 0u64;
        for bytes in &self.block {
            let t = tx::decode(black_box(bytes))
                .map_err(|e| HwError::Failed(format!("transfer block: {e}")))?;
            let seed = u64::from_le_bytes(t.signature[..8].try_into().unwrap_or([0; 8]));
            fees = fees.wrapping_add(bank::execute(&self.store, &t.message, seed).1);
        }
        black_box(fees);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transfer_executes_and_conserves_value() {
        let ctx = Context::for_tests();
        let genesis = bank::fund_initial_accounts(DEFAULT_ACCOUNTS, DEFAULT_BALANCE, 1);
        let mut w = ExecWorkload {
            store: AccountStore::new(&genesis),
            block: bank::transfer_block(&genesis, BLOCK, 42),
        };
        w.iterate().unwrap();
        // Fees are 5 per transfer and never fail with these balances.
        assert_eq!(w.store.total() + 5 * BLOCK as u128, genesis.total());
        assert!(TransferExecute.prepare(&ctx).is_ok());
        assert_eq!(
            TransferExecute.score(1e6),
            1000.0,
            "a million per second is 1 µs each"
        );
    }
}
