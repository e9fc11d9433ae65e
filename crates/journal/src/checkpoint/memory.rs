//! Images kept in memory: the twin of the name directories for an in-process NameNode
//! (tests, fuzzing), so that saveNamespace, image transfer and pruning run there too.

use std::collections::BTreeMap;
use std::io::{self, Cursor};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{image_name, ImageBytes, ImageInfo, ImageSink, ImageStore, Saved, WriteImage};

#[derive(Default)]
pub struct MemoryImages {
    /// By txid.
    held: Mutex<BTreeMap<u64, Held>>,
}

/// One image: its bytes and when it was written (ms since the epoch).
struct Held {
    bytes: Arc<[u8]>,
    written_ms: i64,
}

impl ImageStore for MemoryImages {
    fn list(&self) -> Vec<ImageInfo> {
        let held = self.held.lock();
        held.iter()
            .rev()
            .map(|(&txid, h)| ImageInfo {
                txid,
                bytes: h.bytes.len() as u64,
                written_ms: Some(h.written_ms),
            })
            .collect()
    }

    fn save(&self, write: &mut WriteImage<'_>) -> io::Result<Saved> {
        let mut buf = Cursor::new(Vec::new());
        // A failed write leaves nothing behind, as a discarded temp file does on disk.
        let txid = write(&mut ImageSink::Memory(&mut buf))?;
        let bytes: Arc<[u8]> = buf.into_inner().into();
        let len = bytes.len() as u64;
        let written_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        self.held.lock().insert(txid, Held { bytes, written_ms });
        Ok(Saved {
            txid,
            bytes: len,
            copies: 1,
        })
    }

    fn read(&self, txid: u64) -> io::Result<ImageBytes> {
        let held = self.held.lock();
        let h = held
            .get(&txid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no image {txid}")))?;
        Ok(ImageBytes::Held(h.bytes.clone()))
    }

    fn prune(&self, retain: usize) -> Option<u64> {
        let mut held = self.held.lock();
        while held.len() > retain.max(1) {
            held.pop_first();
        }
        held.keys().next().copied()
    }

    fn describe(&self, txid: u64) -> String {
        format!("memory:{}", image_name(txid))
    }
}
