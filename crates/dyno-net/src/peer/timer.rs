//! The shaping timer of a peer network: a task on its I/O thread that holds each frame
//! (or event) until its delivery time, then hands it on.
//!
//! Readers hand frames over through a channel and the heap is the task's alone (with a
//! heap behind a mutex, a sender preempted while holding the lock held the timer up for a
//! whole scheduler slice). It waits for the earliest due time on a kernel timer of
//! nanosecond resolution (a timerfd, armed at the absolute due time on the wall clock the
//! delivery times are in) that the runtime's reactor watches beside the sockets; tokio's
//! own timers have millisecond ticks and round up, which would make every delivery up to
//! a millisecond late. Never a sleep per message, never early.

use crate::shape::Pending;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::poll_fn;
use std::task::Poll;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::shape::unix_ns;

/// An item and the unix-ns time it may be delivered.
pub(crate) struct Timed<T> {
    pub(crate) due_ns: u64,
    pub(crate) item: T,
}

/// What woke the timer task.
enum Wake<T> {
    Item(Timed<T>),
    Closed,
    Fired,
}

/// The timer task: runs until every sender of `inbox` is gone (or the task is dropped),
/// calling `deliver(item, now_ns)` for each item at or after its due time, in due order.
pub(crate) async fn run<T>(
    mut inbox: UnboundedReceiver<Timed<T>>,
    mut deliver: impl FnMut(T, u64),
) {
    let mut heap: BinaryHeap<Reverse<Pending<T>>> = BinaryHeap::new();
    let mut next_seq = 0u64;
    let mut clock = Clock::new();
    loop {
        // Deliver what is due, then take everything already queued before waiting.
        while let Some(Reverse(p)) = heap.peek() {
            if p.due_ns > unix_ns() {
                break;
            }
            if let Some(Reverse(p)) = heap.pop() {
                deliver(p.item, unix_ns());
            }
        }
        let wake = match heap.peek().map(|Reverse(p)| p.due_ns) {
            Some(due) => clock.wait(due, &mut inbox).await,
            None => match inbox.recv().await {
                Some(t) => Wake::Item(t),
                None => Wake::Closed,
            },
        };
        let mut push = |t: Timed<T>| {
            heap.push(Reverse(Pending {
                due_ns: t.due_ns,
                seq: next_seq,
                item: t.item,
            }));
            next_seq += 1;
        };
        match wake {
            Wake::Item(t) => push(t),
            Wake::Closed => return,
            Wake::Fired => {}
        }
        while let Ok(t) = inbox.try_recv() {
            push(t);
        }
    }
}

/// How the task waits for a due time: a timerfd in the reactor (Linux), else tokio's
/// sleep (millisecond ticks, rounded up: late by up to a millisecond, never early).
struct Clock {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<crate::sys::TimerFd>>,
    /// The due time the timerfd is armed for (0: none).
    #[cfg(target_os = "linux")]
    armed: u64,
}

impl Clock {
    #[cfg(target_os = "linux")]
    fn new() -> Clock {
        // Without a timerfd (a sandbox that refuses it) the tokio sleep still works.
        let fd = crate::sys::TimerFd::new()
            .and_then(crate::sys::TimerFd::register)
            .ok();
        Clock { fd, armed: 0 }
    }

    #[cfg(not(target_os = "linux"))]
    fn new() -> Clock {
        Clock {}
    }

    /// Until `due` passes or an item arrives.
    async fn wait<T>(&mut self, due: u64, inbox: &mut UnboundedReceiver<Timed<T>>) -> Wake<T> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            if self.armed != due && fd.get_ref().arm_at(due).is_ok() {
                self.armed = due;
            }
            if self.armed == due {
                let armed = &mut self.armed;
                let mut broken = false;
                let wake = poll_fn(|cx| {
                    if let Poll::Ready(t) = inbox.poll_recv(cx) {
                        return Poll::Ready(t.map_or(Wake::Closed, Wake::Item));
                    }
                    loop {
                        match fd.poll_read_ready(cx) {
                            Poll::Ready(Ok(mut ready)) => {
                                let fired = fd.get_ref().clear();
                                ready.clear_ready();
                                if fired {
                                    *armed = 0;
                                    return Poll::Ready(Wake::Fired);
                                }
                                // A stale readiness (the timer was re-armed since): poll
                                // again, which registers for the next edge.
                            }
                            // The reactor cannot watch it: use tokio's sleep from now on.
                            Poll::Ready(Err(_)) => {
                                broken = true;
                                return Poll::Ready(Wake::Fired);
                            }
                            Poll::Pending => return Poll::Pending,
                        }
                    }
                })
                .await;
                if broken {
                    self.fd = None;
                }
                return wake;
            }
        }
        let wait = std::time::Duration::from_nanos(due.saturating_sub(unix_ns()));
        match tokio::time::timeout(wait, inbox.recv()).await {
            Ok(Some(t)) => Wake::Item(t),
            Ok(None) => Wake::Closed,
            Err(_) => Wake::Fired,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc::unbounded_channel;

    #[test]
    fn delivers_in_due_order_and_not_early() {
        let io = crate::io::IoThread::start("test-shape", Default::default()).unwrap();
        let (tx, rx) = unbounded_channel();
        let (out, results) = std::sync::mpsc::channel();
        io.handle().spawn(run(rx, move |i: u32, at| {
            let _ = out.send((i, at));
        }));
        let base = unix_ns() + 20_000_000;
        // Pushed out of order; two share a due time and must keep their push order.
        for (due, i) in [
            (base + 2_000_000, 3),
            (base, 1),
            (base + 1_000_000, 2),
            (base + 1_000_000, 22),
        ] {
            tx.send(Timed {
                due_ns: due,
                item: i,
            })
            .ok()
            .unwrap();
        }
        let next = || {
            results
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap()
        };
        let got: Vec<(u32, u64)> = (0..4).map(|_| next()).collect();
        let order: Vec<u32> = got.iter().map(|g| g.0).collect();
        assert_eq!(order, vec![1, 2, 22, 3]);
        let due = [base, base + 1_000_000, base + 1_000_000, base + 2_000_000];
        for ((_, at), due) in got.iter().zip(due) {
            assert!(*at >= due, "delivered {} ns early", due - at);
        }
        // An item due later than one already waiting moves nothing earlier; one due
        // earlier is delivered first.
        let base = unix_ns() + 30_000_000;
        tx.send(Timed {
            due_ns: base + 10_000_000,
            item: 5,
        })
        .ok()
        .unwrap();
        tx.send(Timed {
            due_ns: base,
            item: 4,
        })
        .ok()
        .unwrap();
        let (a, b) = (next(), next());
        assert_eq!((a.0, b.0), (4, 5));
        assert!(a.1 >= base && b.1 >= base + 10_000_000);
        drop(tx);
        io.stop();
    }
}
