//! The I/O thread: one tokio current-thread runtime driven by one named thread.
//!
//! Every socket of a node runs on it: its peer links (with their shaping timer), its
//! QUIC ingress and whatever else the caller starts on its [`IoThread::handle`] (the
//! node's metrics endpoint). A node's thread count then grows neither with its peers nor
//! with the machine's cores: a cluster of thousands of nodes on one machine stays under
//! the kernel's limits on threads.
//!
//! The thread asks the kernel for a timer slack of [`TimerPrecision::slack_ns`], and runs
//! in the real-time class only when [`TimerPrecision::realtime`] asks for it (see there
//! why that is off by default: it would apply to all of the node's network, not only to
//! its deliveries).

use std::thread::JoinHandle;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::error::NetError;
use crate::shape::TimerPrecision;

/// How long stopping waits for work handed to tokio's blocking pool (a host-name lookup
/// of a dialer) before leaving it behind.
const BLOCKING_GRACE: Duration = Duration::from_secs(1);

/// A running I/O thread. Stopping it (or dropping it) drops every task still on it and
/// joins the thread.
#[derive(Debug)]
pub struct IoThread {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl IoThread {
    /// Starts the thread, named `name` (Linux shows 15 bytes of it).
    pub fn start(name: &str, precision: TimerPrecision) -> Result<IoThread, NetError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| NetError::Thread {
                name: name.to_string(),
                source,
            })?;
        let handle = rt.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                precision.apply_to_this_thread();
                rt.block_on(async {
                    let _ = stopped.await;
                });
                rt.shutdown_timeout(BLOCKING_GRACE);
            })
            .map_err(|source| NetError::Thread {
                name: name.to_string(),
                source,
            })?;
        Ok(IoThread {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where to spawn tasks and start networks ([`crate::PeerNet::start_on`],
    /// [`crate::Ingress::start_on`]).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Drops every task still on the thread and joins it.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for IoThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Waits until `task` has ended, from a thread outside the runtime (the caller aborted
/// it, or told it to end). Inside a runtime it returns at once: a task cannot wait for
/// another on the thread that must run it.
pub fn join_task<T>(handle: &Handle, task: tokio::task::JoinHandle<T>) {
    if Handle::try_current().is_ok() {
        return;
    }
    let _ = handle.block_on(task);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_run_on_the_thread_and_stop_drops_them() {
        let io = IoThread::start("test-io", TimerPrecision::default()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        io.handle().spawn(async move {
            let name = std::thread::current().name().map(str::to_string);
            let _ = tx.send(name);
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap().as_deref(),
            Some("test-io")
        );
        // A task that never ends is dropped (its guard with it) when the thread stops.
        let (guard_tx, guard_rx) = std::sync::mpsc::channel::<()>();
        io.handle().spawn(async move {
            let _guard = guard_tx;
            std::future::pending::<()>().await;
        });
        io.stop();
        assert!(guard_rx.recv_timeout(Duration::from_secs(10)).is_err());
    }

    #[test]
    fn join_task_waits_for_an_aborted_task() {
        let io = IoThread::start("test-io-join", TimerPrecision::default()).unwrap();
        let task = io.handle().spawn(std::future::pending::<()>());
        task.abort();
        join_task(io.handle(), task);
        io.stop();
    }
}
