//! The ingress client: one QUIC connection, driven by a one-worker tokio runtime so that
//! datagrams leave while the caller's thread is busy signing.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use super::{hello, transport, IngressMode, END_MARK, PROGRESS_LEN, WIDE_STREAM_WINDOW};
use crate::error::NetError;
use crate::shape::lock;

/// What a client sent and what the server says it took, at close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngressReport {
    /// Transactions this client sent.
    pub sent: u64,
    /// Of those, how many the server handed to its node (accepted or dropped full).
    pub taken: u64,
    /// Of `taken`, how many the node refused (its queue was full).
    pub refused: u64,
}

impl IngressReport {
    /// Transactions lost between client and node (datagrams QUIC dropped).
    pub fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.taken)
    }
}

/// One client connection to a node's QUIC ingress.
pub struct IngressClient {
    rt: tokio::runtime::Runtime,
    endpoint: quinn::Endpoint,
    conn: quinn::Connection,
    stream: Mutex<quinn::SendStream>,
    mode: IngressMode,
    addr: SocketAddr,
    sent: AtomicU64,
    /// The server's latest `(accepted, refused)`, read by a task of the runtime.
    progress: Arc<(AtomicU64, AtomicU64)>,
    /// That task: ends when the server finishes the stream (after the end mark), with
    /// whether it read a final progress message.
    reader: tokio::task::JoinHandle<Result<(), String>>,
}

/// Reads the server's progress messages into `progress` until the stream ends.
async fn read_progress(
    mut recv: quinn::RecvStream,
    progress: Arc<(AtomicU64, AtomicU64)>,
) -> Result<(), String> {
    let mut m = [0u8; PROGRESS_LEN];
    let mut any = false;
    loop {
        match recv.read_exact(&mut m).await {
            Ok(()) => {
                any = true;
                let (accepted, refused) = super::wire::progress(&m);
                progress.0.store(accepted, Relaxed);
                progress.1.store(refused, Relaxed);
            }
            Err(quinn::ReadExactError::FinishedEarly(0)) if any => return Ok(()),
            Err(e) => return Err(format!("no count from the server: {e}")),
        }
    }
}

impl IngressClient {
    /// Connects in the default mode ([`IngressMode::Stream`]) and completes the hello.
    pub fn connect(addr: SocketAddr, genesis_hash: [u8; 32]) -> Result<IngressClient, NetError> {
        Self::connect_with(addr, genesis_hash, IngressMode::default())
    }

    /// Connects sending transactions as `mode` says.
    pub fn connect_with(
        addr: SocketAddr,
        genesis_hash: [u8; 32],
        mode: IngressMode,
    ) -> Result<IngressClient, NetError> {
        Self::connect_alpn(addr, genesis_hash, mode, super::super::tls::ALPN)
    }

    pub(crate) fn connect_alpn(
        addr: SocketAddr,
        genesis_hash: [u8; 32],
        mode: IngressMode,
        alpn: &[u8],
    ) -> Result<IngressClient, NetError> {
        let fail = |reason: String| NetError::QuicConnect { addr, reason };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("net-quic-client")
            .enable_all()
            .build()
            .map_err(|e| NetError::QuicSetup(format!("tokio runtime: {e}")))?;
        let mut cfg =
            quinn::ClientConfig::new(std::sync::Arc::new(crate::tls::client_config(alpn)?));
        cfg.transport_config(transport(WIDE_STREAM_WINDOW));
        let local: SocketAddr = match addr {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let endpoint = {
            let _in_runtime = rt.enter();
            quinn::Endpoint::client(local).map_err(|source| NetError::Bind {
                what: "QUIC client",
                addr: local,
                source,
            })?
        };
        let opened = rt.block_on(async {
            let conn = endpoint
                .connect_with(cfg, addr, "localhost")
                .map_err(|e| e.to_string())?
                .await
                .map_err(|e| e.to_string())?;
            let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
            send.write_all(&hello(&genesis_hash))
                .await
                .map_err(|e| e.to_string())?;
            let mut status = [0u8; 1];
            recv.read_exact(&mut status)
                .await
                .map_err(|e| format!("hello refused: {e}"))?;
            if status[0] != 0 {
                return Err("hello refused: the server has another genesis".to_string());
            }
            Ok((conn, send, recv))
        });
        let (conn, send, recv) = match opened {
            Ok(o) => o,
            Err(reason) => {
                endpoint.close(0u32.into(), b"");
                return Err(fail(reason));
            }
        };
        let progress: Arc<(AtomicU64, AtomicU64)> = Arc::default();
        let reader = rt.spawn(read_progress(recv, Arc::clone(&progress)));
        Ok(IngressClient {
            rt,
            endpoint,
            conn,
            stream: Mutex::new(send),
            mode,
            addr,
            sent: AtomicU64::new(0),
            progress,
            reader,
        })
    }

    /// The mode this client sends in.
    pub fn mode(&self) -> IngressMode {
        self.mode
    }

    /// Sends one transaction.
    pub fn send(&self, tx: &[u8]) -> Result<(), NetError> {
        self.send_batch(std::slice::from_ref(&tx))
    }

    /// Sends several transactions (in stream mode, in one write).
    pub fn send_batch<T: AsRef<[u8]>>(&self, txs: &[T]) -> Result<(), NetError> {
        let fail = |reason: String| NetError::QuicSend {
            addr: self.addr,
            reason,
        };
        match self.mode {
            IngressMode::Stream => {
                let mut buf = Vec::with_capacity(txs.iter().map(|t| 4 + t.as_ref().len()).sum());
                for tx in txs {
                    let tx = tx.as_ref();
                    let len = u32::try_from(tx.len())
                        .ok()
                        .filter(|l| *l != END_MARK)
                        .ok_or(NetError::TooLarge {
                            len: tx.len(),
                            limit: END_MARK as usize - 1,
                        })?;
                    buf.extend_from_slice(&len.to_be_bytes());
                    buf.extend_from_slice(tx);
                }
                let mut s = lock(&self.stream);
                self.rt
                    .block_on(s.write_all(&buf))
                    .map_err(|e| fail(e.to_string()))?;
            }
            IngressMode::Datagram => {
                let limit = self.conn.max_datagram_size().unwrap_or(0);
                for tx in txs {
                    let tx = tx.as_ref();
                    if tx.len() > limit {
                        return Err(NetError::TooLarge {
                            len: tx.len(),
                            limit,
                        });
                    }
                }
                self.rt
                    .block_on(async {
                        for tx in txs {
                            let d = bytes::Bytes::copy_from_slice(tx.as_ref());
                            self.conn.send_datagram_wait(d).await?;
                        }
                        Ok::<(), quinn::SendDatagramError>(())
                    })
                    .map_err(|e| fail(e.to_string()))?;
            }
        }
        self.sent.fetch_add(txs.len() as u64, Relaxed);
        Ok(())
    }

    /// Transactions sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Relaxed)
    }

    /// What the server last said the node accepted and refused of this connection's
    /// transactions (it says so every 250 ms when it changed).
    pub fn progress(&self) -> (u64, u64) {
        (self.progress.0.load(Relaxed), self.progress.1.load(Relaxed))
    }

    /// Ends the stream, waits for the server's final count of what it took, and closes.
    pub fn close(self) -> Result<IngressReport, NetError> {
        let sent = self.sent();
        let mut send = self.stream.into_inner().unwrap_or_else(|e| e.into_inner());
        let addr = self.addr;
        let reader = self.reader;
        let done = self.rt.block_on(async {
            let end = super::wire::encode_end(sent);
            send.write_all(&end).await.map_err(|e| e.to_string())?;
            let _ = send.finish();
            reader.await.map_err(|e| e.to_string())?
        });
        self.conn.close(0u32.into(), b"done");
        self.rt.block_on(self.endpoint.wait_idle());
        done.map_err(|reason| NetError::QuicSend { addr, reason })?;
        let (accepted, refused) = (self.progress.0.load(Relaxed), self.progress.1.load(Relaxed));
        Ok(IngressReport {
            sent,
            taken: accepted + refused,
            refused,
        })
    }
}
