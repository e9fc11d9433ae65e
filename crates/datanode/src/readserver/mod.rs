//! The DataNode's read server (HDFS-918 done the event-driven way): a connection is a task,
//! never a thread; packets whose data is in the page cache go out with sendfile from the
//! connection's task, and anything that would wait for a disk goes to that volume's small
//! I/O pool; block files stay open in a shared, capped cache.

pub mod handles;
pub mod iopool;
pub mod metrics;
pub mod os;
