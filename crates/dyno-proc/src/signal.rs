//! Signals, sent with kill(2) (never by spawning `kill`).

use std::fmt;

/// The signals dyno sends to the processes it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGINT: what Ctrl-C sends; most nodes shut down cleanly on it.
    Int,
    /// SIGTERM: what service managers send.
    Term,
    /// SIGQUIT.
    Quit,
    /// SIGHUP.
    Hup,
    /// SIGKILL: cannot be caught; the end of every stop.
    Kill,
    /// SIGSTOP: freezes the process until SIGCONT (a paused node); cannot be caught.
    Stop,
    /// SIGCONT: resumes a stopped process.
    Cont,
}

impl Signal {
    /// The signal's number on this system.
    pub fn number(self) -> libc::c_int {
        match self {
            Signal::Int => libc::SIGINT,
            Signal::Term => libc::SIGTERM,
            Signal::Quit => libc::SIGQUIT,
            Signal::Hup => libc::SIGHUP,
            Signal::Kill => libc::SIGKILL,
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
        }
    }

    /// Parses `INT`, `SIGINT`, `int`, ... (the names `kill -l` prints).
    pub fn parse(name: &str) -> Option<Signal> {
        let upper = name.trim().to_ascii_uppercase();
        let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
        Some(match bare {
            "INT" => Signal::Int,
            "TERM" => Signal::Term,
            "QUIT" => Signal::Quit,
            "HUP" => Signal::Hup,
            "KILL" => Signal::Kill,
            "STOP" => Signal::Stop,
            "CONT" => Signal::Cont,
            _ => return None,
        })
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Quit => "SIGQUIT",
            Signal::Hup => "SIGHUP",
            Signal::Kill => "SIGKILL",
            Signal::Stop => "SIGSTOP",
            Signal::Cont => "SIGCONT",
        })
    }
}

/// Sends `sig` to process `pid`. Pid 0 and pids beyond `pid_t` are refused (kill(2) would
/// read them as "my group" or a group id).
pub fn signal_process(pid: u32, sig: Signal) -> std::io::Result<()> {
    crate::sys::kill(checked_pid(pid)?, sig.number())
}

/// Sends `sig` to every process of process group `pgid`.
pub fn signal_group(pgid: u32, sig: Signal) -> std::io::Result<()> {
    crate::sys::kill(-checked_pid(pgid)?, sig.number())
}

fn checked_pid(pid: u32) -> std::io::Result<libc::pid_t> {
    match libc::pid_t::try_from(pid) {
        Ok(p) if p > 1 => Ok(p),
        _ => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_kill_prints_them() {
        assert_eq!(Signal::parse("SIGTERM"), Some(Signal::Term));
        assert_eq!(Signal::parse("int"), Some(Signal::Int));
        assert_eq!(Signal::parse("USR1"), None);
        assert_eq!(Signal::Kill.to_string(), "SIGKILL");
        assert_eq!(Signal::Int.number(), libc::SIGINT);
        assert_eq!(Signal::parse("cont"), Some(Signal::Cont));
        assert_eq!(Signal::Stop.number(), libc::SIGSTOP);
    }

    #[test]
    fn pid_zero_and_init_are_never_signalled() {
        assert!(signal_process(0, Signal::Kill).is_err());
        assert!(signal_process(1, Signal::Kill).is_err());
        assert!(signal_group(u32::MAX, Signal::Kill).is_err());
    }

    #[test]
    fn a_signal_ends_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let sent = signal_process(child.id(), Signal::Term);
        if sent.is_err() {
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        sent.unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }
}

/// Makes a closed pipe end this process the way it ends `cat` or `grep` (SIGPIPE's
/// default action), instead of a panic with exit code 101 in the first `eprintln!` after
/// the reader went away (`dyno ... 2>&1 | head`). Call first thing in a command-line
/// program; children keep whatever they set for themselves.
pub fn die_on_closed_pipe() {
    crate::sys::default_sigpipe();
}
