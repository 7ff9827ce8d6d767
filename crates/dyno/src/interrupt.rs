//! Ctrl-C: the first press asks the running measurement to stop after its current
//! iteration (samples taken so far are kept and the run is marked incomplete); a second
//! press removes benchmark files and exits at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

static STOP: AtomicBool = AtomicBool::new(false);
static PRESSES: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: OnceLock<()> = OnceLock::new();

/// Installs the handler once and returns the flag measurements poll.
pub fn stop_flag() -> &'static AtomicBool {
    INSTALLED.get_or_init(|| {
        let _ = ctrlc::set_handler(|| {
            STOP.store(true, Ordering::SeqCst);
            if PRESSES.fetch_add(1, Ordering::SeqCst) >= 1 {
                dyno_hw::remove_temp_files();
                eprintln!("\ninterrupted twice: exiting now");
                std::process::exit(130);
            }
            eprintln!("\ninterrupt: stopping after the current iteration (press Ctrl-C again to quit now)");
        });
    });
    &STOP
}
