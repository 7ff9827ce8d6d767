//! The ledger tile.

use super::*;

/// Appends ledger entries to a file (`u32 length` + entry each).
pub struct Store {
    shared: Arc<Shared>,
    file: std::io::BufWriter<std::fs::File>,
    /// Entries written.
    pub entries: u64,
    /// Bytes written.
    pub bytes: u64,
    /// First write error, if any (the tile keeps consuming so nothing upstream stalls).
    pub error: Option<String>,
}

impl Store {
    /// A store appending to `file`.
    pub fn new(file: std::fs::File, shared: Arc<Shared>) -> Store {
        Store {
            shared,
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            entries: 0,
            bytes: 0,
            error: None,
        }
    }

    /// Flushes buffered entries.
    pub fn flush(&mut self) {
        if let Err(e) = self.file.flush() {
            self.error.get_or_insert(e.to_string());
        }
    }
}

impl Tile for Store {
    fn after_frag(
        &mut self,
        _: usize,
        meta: &FragMeta,
        payload: &[u8],
        _: &mut Outputs,
    ) -> FragOutcome {
        let r = self
            .file
            .write_all(&(payload.len() as u32).to_le_bytes())
            .and_then(|()| self.file.write_all(payload));
        if let Err(e) = r {
            self.error.get_or_insert(e.to_string());
        }
        self.entries += 1;
        self.bytes += 4 + payload.len() as u64;
        // The slot's last entry: the block is adopted once it reached the file.
        if meta.sig & SLOT_END != 0 {
            self.flush();
            let now = self.shared.now_ns();
            self.shared.telemetry.slot_adopted(meta.sig >> 2, now);
        }
        FragOutcome::Done
    }
}
