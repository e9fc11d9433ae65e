//! The NameNode's durable state: the journal (edit segments in every journal directory,
//! group-committed and synced, with the `EditLog` seam, recovery and salvage of damaged
//! segments, and tailing), the checkpoint images (the `ImageStore` seam, on disk and in
//! memory), the atomic file writes both stand on, and the start-up progress a load
//! reports. Records and their codec are the namespace's (`ferrite_namespace::codec`).

pub mod atomic_file;
pub mod checkpoint;
pub mod journal;
pub mod startup_progress;
