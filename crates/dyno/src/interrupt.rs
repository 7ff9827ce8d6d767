//! SIGINT, SIGTERM and SIGHUP: the first asks the running work to stop after its current
//! iteration (samples taken so far are kept and the run is marked incomplete). What a
//! second one does depends on the command: most exit at once after removing benchmark
//! files; commands that own child processes (compare, node, cluster) keep stopping them,
//! since exiting would orphan them.
//!
//! The process then exits with 128 + the number of the first signal: 130 for Ctrl-C,
//! 143 for SIGTERM, 129 for SIGHUP, as shells and service managers expect.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::OnceLock;

static STOP: AtomicBool = AtomicBool::new(false);
/// The first signal received (0: none yet).
static FIRST: AtomicI32 = AtomicI32::new(0);
static MODE: AtomicU8 = AtomicU8::new(Mode::ExitOnSecond as u8);
static INSTALLED: OnceLock<()> = OnceLock::new();

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    /// A second signal removes benchmark files and exits at once.
    ExitOnSecond,
    /// A second signal only says that children are still being stopped.
    KeepStopping,
}

fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "interrupt",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

fn install(mode: Mode) -> &'static AtomicBool {
    MODE.store(mode as u8, Ordering::SeqCst);
    INSTALLED.get_or_init(|| {
        // A handler thread (not a signal handler) so that printing and clean-up are safe.
        let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(s) => s,
            Err(e) => {
                errln!(
                    "warning: cannot install signal handlers ({e}); Ctrl-C will end dyno at once"
                );
                return;
            }
        };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                on_signal(sig);
            }
        });
    });
    &STOP
}

fn on_signal(sig: i32) {
    let first = FIRST
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    STOP.store(true, Ordering::SeqCst);
    let keep = MODE.load(Ordering::SeqCst) == Mode::KeepStopping as u8;
    match (first, keep) {
        (true, false) => errln!(
            "\n{}: stopping after the current iteration (press Ctrl-C again to quit now)",
            name(sig)
        ),
        (true, true) => errln!("\n{}: stopping; what was done is kept", name(sig)),
        (false, false) => {
            dyno_hw::remove_temp_files();
            errln!("\n{} again: exiting now", name(sig));
            std::process::exit(exit_code().into());
        }
        (false, true) => {
            errln!("\n{} again: still stopping the child processes", name(sig))
        }
    }
}

static WAITER: std::sync::Mutex<Option<dyno_proc::SignalWaiter>> = std::sync::Mutex::new(None);

/// Like [`stop_flag`], without a handler thread: the caller's own thread blocks in
/// [`wait_for_signals`] between its other work ([`dyno_proc::SignalWaiter`]), for `dyno
/// node run`, which a cluster runs thousands of times on one machine. Falls back to
/// [`stop_flag`] if the signals cannot be registered that way.
pub fn stop_flag_waited() -> &'static AtomicBool {
    MODE.store(Mode::ExitOnSecond as u8, Ordering::SeqCst);
    let mut waiter = WAITER.lock().unwrap_or_else(|p| p.into_inner());
    if waiter.is_none() && INSTALLED.get().is_none() {
        match dyno_proc::SignalWaiter::register(&[SIGINT, SIGTERM, SIGHUP]) {
            Ok(w) => *waiter = Some(w),
            Err(_) => return stop_flag(),
        }
    }
    &STOP
}

/// Blocks until a signal arrives or `timeout` passes (`None`: until a signal), then acts
/// on the signals that arrived ([`stop_flag_waited`]).
pub fn wait_for_signals(timeout: Option<std::time::Duration>) {
    let mut waiter = WAITER.lock().unwrap_or_else(|p| p.into_inner());
    let Some(w) = waiter.as_mut() else {
        drop(waiter);
        std::thread::sleep(timeout.unwrap_or(std::time::Duration::from_millis(100)));
        return;
    };
    let arrived = w.wait(timeout);
    drop(waiter);
    for sig in arrived {
        on_signal(sig);
    }
}

/// Installs the handlers once and returns the flag measurements poll; a second signal
/// exits at once.
pub fn stop_flag() -> &'static AtomicBool {
    install(Mode::ExitOnSecond)
}

/// Like [`stop_flag`], for commands that own child processes: a second signal does not
/// exit (that would orphan them); stopping them takes at most their grace period.
pub fn stop_flag_keep_stopping() -> &'static AtomicBool {
    install(Mode::KeepStopping)
}

/// For commands that run until stopped (a node, a layout): after a clean stop, the code
/// to exit with when a signal stopped them (128 + its number), none when they ended on
/// their own (a duration, a frag count).
pub fn signalled_exit_code() -> Option<u8> {
    (FIRST.load(Ordering::SeqCst) != 0).then(exit_code)
}

/// The exit code of an interrupted command: 128 + the first signal's number, 130 when
/// no signal was seen (the work reported an interruption by other means).
pub fn exit_code() -> u8 {
    match FIRST.load(Ordering::SeqCst) {
        0 => 128 + SIGINT as u8,
        sig => 128u8.saturating_add(sig as u8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(128 + SIGINT, 130);
        assert_eq!(128 + SIGTERM, 143);
        assert_eq!(exit_code(), 130, "no signal yet: Ctrl-C's code");
    }
}
