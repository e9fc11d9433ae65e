//! What a [`FileSystem`](crate::FileSystem) shares with the readers and writers it opens:
//! its NameNode link, its client name and user, and its open-writer count (which
//! keeps lease renewal going).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::net::Dial;
use ferrite_proto::hdfs::FsServerDefaultsProto;

pub(crate) struct Inner {
    /// Shared by the sessions made with [`FileSystem::session`], as Hadoop's clients in
    /// one process share a connection per user and address.
    pub nn: Arc<crate::namenodes::NameNodes>,
    pub client_name: String,
    /// How DataNodes are reached (TCP, or the simulator's network).
    pub dial: Arc<dyn Dial>,
    pub user: String,
    pub open_writers: AtomicUsize,
    /// Kept for the sessions made from this one.
    pub lease_renewal: Duration,
    /// The NameNode's server defaults, asked once per connection (as Hadoop's client
    /// keeps them) and shared by its sessions: a create is then one round trip.
    pub defaults: Arc<tokio::sync::OnceCell<FsServerDefaultsProto>>,
}
