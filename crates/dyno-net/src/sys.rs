//! Operating-system calls that std does not offer. The only `unsafe` of the crate.
#![allow(unsafe_code)]

/// Asks the kernel to wake the calling thread within `slack_ns` of its timers instead of
/// the default 50 us, so the shaping timer fires close to each delivery time. Returns
/// false when the kernel refused (the timer then keeps working, only less precisely).
pub fn set_timer_slack_ns(slack_ns: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument by value and touches no
        // memory of the caller; it only changes the calling thread's timer slack.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_TIMERSLACK,
                slack_ns as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = slack_ns;
        false
    }
}

/// Puts the calling thread in the SCHED_FIFO real-time class at `priority` (1-99), so it
/// runs as soon as its timer fires instead of waiting behind busy threads. Returns false
/// when not permitted (needs CAP_SYS_NICE or an RLIMIT_RTPRIO allowance).
pub fn set_realtime_fifo(priority: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0
        // names the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = priority;
        false
    }
}

/// The calling thread's timer slack in nanoseconds (None off Linux or on error).
#[cfg(test)]
pub fn timer_slack_ns() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments and returns the value.
        let rc = unsafe {
            libc::prctl(
                libc::PR_GET_TIMERSLACK,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        (rc >= 0).then_some(rc as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn timer_slack_is_set_on_this_thread_only() {
        let before = super::timer_slack_ns().unwrap();
        let t = std::thread::spawn(|| {
            assert!(super::set_timer_slack_ns(1));
            super::timer_slack_ns().unwrap()
        });
        assert_eq!(t.join().unwrap(), 1);
        assert_eq!(super::timer_slack_ns().unwrap(), before);
    }
}
