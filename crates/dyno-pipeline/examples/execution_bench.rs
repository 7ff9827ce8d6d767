//! Prints the bank's cost per executed transfer (the `execution_bench` kernel), five
//! repetitions over blocks of 100,000 transfers among 1024 funded accounts.
//!
//! `cargo run --release -p dyno-pipeline --example execution_bench`

fn main() {
    let mut v: Vec<f64> = (0..5)
        .map(|_| dyno_pipeline::execution_bench(1024, 100_000).ns_per_transfer)
        .collect();
    v.sort_by(f64::total_cmp);
    println!(
        "ns per transfer executed: median {:.1} (min {:.1}, max {:.1}) over 5 blocks of 100000",
        v[2], v[0], v[4]
    );
}
