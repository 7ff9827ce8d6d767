//! QUIC ingress throughput, datagrams vs one stream of length-prefixed frames.
//!
//! One client sends 178-byte transactions flat out (batches of 64, then one per call) to
//! a server on
//! loopback whose node only counts them. The two modes alternate (S D S D ...) so a
//! change in machine load hits both alike. Rate = transactions the server took divided
//! by the time from the first send to the client's close (which waits for the server's
//! count, so everything counted was really received).
//!
//! `cargo bench -p dyno-net --bench ingress` (prints a table; asserts nothing).

use std::time::Instant;

use dyno_net::{Ingress, IngressClient, IngressConfig, IngressMode};

const TX_BYTES: usize = 178;
const TXS: usize = 200_000;
/// Batch sizes compared: 64 (a load generator that batches) and 1 (one call per tx).
const BATCHES: [usize; 2] = [64, 1];
const ROUNDS: usize = 3;

fn main() {
    let genesis = [5; 32];
    let ingress = Ingress::start(
        IngressConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            genesis_hash: genesis,
            max_frame: 1232,
            max_tps_per_connection: None,
        },
        // The node only counts: what is measured is the transport.
        |_tx: &[u8]| true,
    )
    .unwrap();
    for batch in BATCHES {
        // One call per transaction is slow: fewer of them keep the run short.
        let txs = if batch == 1 { TXS / 4 } else { TXS };
        compare(&ingress, genesis, batch, txs);
    }
    let c = ingress.counters();
    println!(
        "server: {} connections, {} accepted, {} malformed, {} oversized",
        c.connections, c.accepted, c.malformed, c.oversized
    );
    ingress.shutdown();
}

fn compare(ingress: &Ingress, genesis: [u8; 32], batch_len: usize, txs: usize) {
    let batch: Vec<Vec<u8>> = (0..batch_len).map(|i| vec![i as u8; TX_BYTES]).collect();
    let mut results: Vec<(IngressMode, f64, u64)> = Vec::new();
    println!(
        "\n{txs} transactions of {TX_BYTES} bytes per run, batches of {batch_len}, {ROUNDS} rounds"
    );
    println!(
        "{:<10} {:>6} {:>14} {:>10}",
        "mode", "round", "tx/s taken", "lost"
    );
    for round in 0..ROUNDS {
        for mode in [IngressMode::Stream, IngressMode::Datagram] {
            let client = IngressClient::connect_with(ingress.local_addr(), genesis, mode).unwrap();
            let start = Instant::now();
            for _ in 0..txs / batch_len {
                client.send_batch(&batch).unwrap();
            }
            let report = client.close().unwrap();
            let rate = report.taken as f64 / start.elapsed().as_secs_f64();
            println!(
                "{:<10} {:>6} {:>14.0} {:>10}",
                format!("{mode:?}"),
                round + 1,
                rate,
                report.lost()
            );
            results.push((mode, rate, report.lost()));
        }
    }
    for mode in [IngressMode::Stream, IngressMode::Datagram] {
        let mut rates: Vec<f64> = results
            .iter()
            .filter(|r| r.0 == mode)
            .map(|r| r.1)
            .collect();
        rates.sort_by(|a, b| a.total_cmp(b));
        let lost: u64 = results.iter().filter(|r| r.0 == mode).map(|r| r.2).sum();
        println!(
            "{:<10} median {:.0} tx/s (min {:.0}, max {:.0}), lost {lost} of {}",
            format!("{mode:?}"),
            rates[rates.len() / 2],
            rates[0],
            rates[rates.len() - 1],
            ROUNDS * (txs / batch_len) * batch_len
        );
    }
}
