//! NameNode configuration, read with Hadoop's key names.
//!
//! Sources, later ones winning: built-in defaults, `core-site.xml` and `hdfs-site.xml` from
//! `HADOOP_CONF_DIR`, then `--conf KEY=VALUE` pairs. Keys Ferrite does not know are reported
//! back to the caller to log; they are never fatal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrite_ipc::conf::parse_size;

/// The highest `dfs.namenode.fs-limits.max-directory-items` HDFS accepts.
const MAX_DIR_ITEMS: u64 = 6_400_000;

/// The highest `dfs.namenode.fs-limits.max-component-length` Ferrite accepts.
const MAX_COMPONENT_LEN: u64 = crate::namespace::path::MAX_COMPONENT_LEN as u64;

/// What start-up does where the journal is damaged with records after the damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Stop, naming the file and offset.
    Off,
    /// `--recover`: keep the records before the damage and set the rest aside
    /// (`journal::recover::replay_recovering`).
    Stop,
    /// `--recover skip`: replay every record still readable past it (`journal::salvage`).
    Skip,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// `dfs.blocksize`
    pub block_size: u64,
    /// `dfs.replication`
    pub replication: u16,
    /// `dfs.replication.max`
    pub max_replication: u16,
    /// `dfs.namenode.replication.min`
    pub min_replication: u16,
    /// `dfs.namenode.fs-limits.min-block-size`
    pub min_block_size: u64,
    /// `dfs.namenode.fs-limits.max-directory-items`: most entries a directory may hold.
    pub max_dir_items: usize,
    /// `dfs.namenode.fs-limits.max-blocks-per-file`: most blocks a file may have.
    pub max_blocks_per_file: usize,
    /// `dfs.namenode.fs-limits.max-component-length`: longest name, in bytes, a new entry
    /// may have.
    pub max_component_len: usize,
    /// `dfs.namenode.xattrs.enabled`, `dfs.namenode.fs-limits.max-xattrs-per-inode` and
    /// `dfs.namenode.fs-limits.max-xattr-size`.
    pub xattrs: crate::namespace::xattr::XAttrLimits,
    /// `dfs.storage.policy.enabled`: whether policies may be set.
    pub storage_policy_enabled: bool,
    /// `dfs.namenode.acls.enabled` (on by default, as in Hadoop 3).
    pub acls_enabled: bool,
    /// The storage policy satisfier (`dfs.storage.policy.satisfier.mode`, `…max.outstanding.paths`,
    /// `…retry.max.attempts`).
    pub satisfier: SatisfierConfig,
    /// `dfs.bytes-per-checksum`
    pub bytes_per_checksum: u32,
    /// `dfs.client-write-packet-size`
    pub write_packet_size: u32,
    /// `io.file.buffer.size`
    pub file_buffer_size: u32,
    /// `fs.trash.interval`, minutes; 0 turns trash off.
    pub trash_interval_min: u64,
    /// `fs.trash.checkpoint.interval`, minutes; 0 means the same as the trash interval.
    pub trash_checkpoint_interval_min: u64,
    /// `dfs.ls.limit`: entries per getListing page.
    pub ls_limit: usize,
    /// `dfs.namenode.list.openfiles.num.responses`: entries per listOpenFiles batch.
    pub list_open_files_max: usize,
    /// `ipc.maximum.data.length`: largest request frame.
    pub max_frame_len: u32,
    /// `ferrite.ipc.read-batch.bytes`: while a connection holds four or more replies for a
    /// journal sync (and its latest calls were all mutations), its reader is woken only
    /// once this many request bytes have arrived or its held replies next go out, instead
    /// of for every call. NNThroughputBenchmark over RPC: 5–12% less NameNode CPU per
    /// create, mkdir, rename and delete. A call that arrives in such a stretch waits for
    /// the bytes or that release: usually the sync in flight, at worst the group-commit
    /// delay plus one sync. 0 turns it off.
    pub read_batch_bytes: u32,
    /// `dfs.permissions.enabled`
    pub permissions_enabled: bool,
    /// `dfs.permissions.superusergroup`
    pub superuser_group: String,
    /// `dfs.namenode.lease-hard-limit-sec`
    pub lease_hard_limit_sec: u64,
    /// `ferrite.namenode.block-recovery.timeout.ms`: a block recovery whose primary has
    /// not reported back after this long is started again, with another primary.
    pub block_recovery_timeout_ms: u64,
    /// `dfs.namenode.accesstime.precision` (ms): an open moves a file's access time once
    /// this much has passed since the last move; 0 turns access times off (and `setTimes`
    /// with an access time is refused, as in HDFS).
    pub access_time_precision_ms: u64,
    /// `hadoop.user.group.static.mapping.overrides` (`user=g1,g2;user2=`)
    pub static_groups: String,
    /// `hadoop.proxyuser.*`: who may act for whom (WebHDFS's `doas`).
    pub proxy_users: crate::proxy_users::ProxyUsers,
    /// Secure mode: Kerberos on the IPC port.
    pub security: crate::security::SecurityConfig,
    /// `net.topology.*`: which rack each DataNode is on.
    pub topology: crate::topology::TopologyConfig,
    /// `dfs.hosts`, `dfs.hosts.exclude`: which DataNodes may join, which are to leave.
    pub hosts: crate::hosts::HostsConfig,
    /// The HTTP port's keys (`hadoop.http.*`).
    pub http: ferrite_http::HttpSettings,
    /// `dfs.namenode.maintenance.replication.min`: replicas a block keeps on nodes in
    /// service while a holder is in maintenance.
    pub maintenance_replication_min: usize,
    /// `dfs.namenode.replication.max-streams`: copies a DataNode may have queued to send.
    pub replication_max_streams: usize,
    /// `dfs.namenode.replication.work.multiplier.per.iteration`: copies ordered per
    /// replication pass, per live DataNode.
    pub replication_work_multiplier: usize,
    /// `dfs.namenode.name.dir`
    pub name_dirs: Vec<PathBuf>,
    /// `fs.defaultFS`
    pub default_fs: Option<String>,
    /// The HA keys as given (`ha_config::is_ha_key`); [`Config::ha_group`] reads them.
    pub ha_keys: std::collections::BTreeMap<String, String>,
    /// An HA group's Raft pace: `ferrite.ha.raft.heartbeat.ms`,
    /// `ferrite.ha.raft.election-timeout.ms` (the shortest; the longest is twice it) and
    /// `ferrite.ha.raft.snapshot.entries` (log entries between snapshots).
    pub raft_timing: ferrite_raft::Timing,
    /// `ferrite.ha.raft.fault.cut-file`: a test fault, the Raft network cut while the
    /// file exists (see `raft_cut`).
    pub raft_cut_file: Option<PathBuf>,
    /// `dfs.namenode.enable.retrycache`
    pub retry_cache_enabled: bool,
    /// `dfs.namenode.retrycache.expirytime.millis`
    pub retry_cache_expiry_ms: u64,
    /// `dfs.namenode.retrycache.heap.percent`: Hadoop's cap on the cache, which it turns
    /// into an entry count from the JVM's heap (see [`retry_cache_capacity`]).
    pub retry_cache_heap_percent: f64,
    /// `ferrite.namenode.retrycache.max-entries`: an explicit cap, instead of the heap share.
    pub retry_cache_max_entries: Option<usize>,
    /// `dfs.namenode.edits.dir` (plus `--journal-dir`); empty means the name directories.
    pub edits_dirs: Vec<PathBuf>,
    /// Journal directories whose failure stops the NameNode (`dfs.namenode.edits.dir.required`).
    pub required_edits_dirs: Vec<PathBuf>,
    /// Directories not required that must stay in service (`dfs.namenode.edits.dir.minimum`).
    pub edits_dir_minimum: usize,
    /// `dfs.namenode.checkpoint.txns`: take an image after this many transactions.
    pub checkpoint_txns: u64,
    /// `dfs.namenode.checkpoint.period`: … or after this many seconds.
    pub checkpoint_period_sec: u64,
    /// `dfs.namenode.num.checkpoints.retained`
    pub checkpoints_retained: usize,
    /// `dfs.namenode.num.extra.edits.retained`: journal transactions kept from before the
    /// oldest retained image (whole segments only), for an operator's `oev` or a recovery.
    pub extra_edits_retained: u64,
    /// `ferrite.journal.segment.bytes`
    pub journal_segment_bytes: u64,
    /// `ferrite.journal.segment.txns`
    pub journal_segment_txns: u64,
    /// `ferrite.journal.preallocate.bytes`
    pub journal_prealloc_bytes: u64,
    /// `ferrite.journal.tail.bytes`: synced records kept in memory for journal followers.
    /// 4 MiB is some 30,000 creates, a fifth of a second at full in-process speed; the
    /// in-process summary trails by milliseconds, and a follower further behind reads the
    /// segments instead. The tail is a fixed cost: at 16 MiB it was 16 bytes per file of
    /// a million-file namespace.
    pub journal_tail_bytes: u64,
    /// `ferrite.journal.group-commit.delay.us`: see [`JournalConfig::group_delay`].
    ///
    /// [`JournalConfig::group_delay`]: crate::journal::JournalConfig::group_delay
    pub journal_group_delay_us: u64,
    /// `ferrite.journal.dir.timeout.ms`: a journal directory that has not finished a
    /// write, sync or roll after this long is taken out of service and the others go on;
    /// with none left (a lone directory that hangs) the NameNode stops. As QJM's write
    /// timeout in HDFS: 20 s.
    pub journal_dir_timeout_ms: u64,
    /// `dfs.namenode.name.dir.restore`: at each journal roll, try to bring failed journal
    /// directories back into service (HDFS's default: off). `hdfs dfsadmin
    /// -restoreFailedStorage` switches it while running.
    pub restore_failed_dirs: bool,
    /// Recovery mode (`--recover`; not a site key: an operator's one-off decision).
    pub recovery: Recovery,
    /// `ferrite.summary.enabled`: keep the namespace summary and answer
    /// getContentSummary from it.
    pub summary_enabled: bool,
    /// `ferrite.summary.checkpoint.txns`: checkpoint the summary after this many records …
    pub summary_checkpoint_txns: u64,
    /// `ferrite.summary.checkpoint.period` (seconds): … or this long after the last one.
    pub summary_checkpoint_period_sec: u64,
    /// `ferrite.summary.wait.ms`: how long getContentSummary waits for the summary to
    /// catch up with the namespace before it walks the tree instead.
    pub summary_wait_ms: u64,
    /// `ferrite.summary.rest.ms`: how long the summary's follower rests between reads of
    /// the journal, so that under load it applies many synced batches per wake-up. A
    /// content summary that needs newer edits wakes it at once. Off (0: batch by batch) by
    /// default: 5 ms cut the summary thread's CPU by about a quarter under remote
    /// NNThroughputBenchmark, but its bursts cost in-process mkdirs about 20% (creates
    /// about 5%) at 256 clients.
    pub summary_rest_ms: u64,
    /// `dfs.heartbeat.interval` (seconds), also what DataNodes are told to use.
    pub heartbeat_interval_sec: u64,
    /// `dfs.namenode.heartbeat.recheck-interval` (ms): a DataNode is dead after twice this
    /// plus ten heartbeat intervals without a heartbeat.
    pub heartbeat_recheck_ms: u64,
    /// `dfs.namenode.stale.datanode.interval` (ms): stale nodes are read from last.
    pub stale_interval_ms: u64,
    /// `dfs.namenode.safemode.threshold-pct`: the share of blocks that must be reported.
    pub safemode_threshold: f64,
    /// `dfs.namenode.safemode.extension` (ms) to wait once the threshold is reached.
    pub safemode_extension_ms: u64,
    /// `dfs.namenode.safemode.min.datanodes`
    pub safemode_min_datanodes: usize,
    /// `dfs.namenode.resource.du.reserved`: the free bytes a journal directory must keep;
    /// with none in service that has them, the NameNode enters safe mode.
    pub resource_reserved_bytes: u64,
    /// `dfs.namenode.resource.check.interval` (ms): how often free space is checked.
    pub resource_check_interval_ms: u64,
    /// `dfs.namenode.resource.checked.volumes.minimum`: journal directories not required
    /// that must keep the reserve.
    pub resource_checked_minimum: usize,
    /// `dfs.namenode.redundancy.interval.seconds`: how often replication is checked.
    pub replication_interval_sec: u64,
    /// `dfs.block.access.token.enable`: on by default in Ferrite (off in HDFS).
    pub block_tokens: bool,
    /// `dfs.block.access.key.update.interval` and `dfs.block.access.token.lifetime`
    /// (minutes, as HDFS reads them; the `ferrite.block.access.*.ms` forms take milliseconds).
    pub block_key_times: ferrite_blocktoken::KeyTimes,
}

/// The storage policy satisfier's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SatisfierConfig {
    /// HDFS's modes are `none` (its default: the call is refused) and `external` (a
    /// separate satisfier process does the work). Ferrite's NameNode does that work itself,
    /// so `external` needs no other process, and is Ferrite's default.
    pub enabled: bool,
    /// Most paths waiting at once (`…max.outstanding.paths`, 10,000 as in HDFS).
    pub max_paths: usize,
    /// Rounds of moves a path gets before it is given up on (`…retry.max.attempts`, 3).
    pub max_rounds: u32,
}

impl Default for SatisfierConfig {
    fn default() -> Self {
        SatisfierConfig {
            enabled: true,
            max_paths: 10_000,
            max_rounds: 3,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            block_size: 128 << 20,
            replication: 3,
            max_replication: 512,
            min_replication: 1,
            min_block_size: 1 << 20,
            max_dir_items: crate::namespace::Limits::default().dir_items,
            max_blocks_per_file: crate::namespace::Limits::default().blocks_per_file,
            max_component_len: crate::namespace::Limits::default().component_len,
            xattrs: Default::default(),
            storage_policy_enabled: true,
            acls_enabled: true,
            satisfier: SatisfierConfig::default(),
            bytes_per_checksum: 512,
            write_packet_size: 64 << 10,
            file_buffer_size: 4096,
            trash_interval_min: 0,
            trash_checkpoint_interval_min: 0,
            ls_limit: 1000,
            list_open_files_max: 1000,
            max_frame_len: 64 << 20,
            read_batch_bytes: 4096,
            permissions_enabled: true,
            superuser_group: "supergroup".into(),
            lease_hard_limit_sec: 20 * 60,
            block_recovery_timeout_ms: 30_000,
            access_time_precision_ms: 3_600_000,
            static_groups: String::new(),
            proxy_users: Default::default(),
            security: Default::default(),
            topology: Default::default(),
            hosts: Default::default(),
            http: Default::default(),
            maintenance_replication_min: 1,
            replication_max_streams: 2,
            replication_work_multiplier: 2,
            name_dirs: Vec::new(),
            default_fs: None,
            ha_keys: Default::default(),
            raft_timing: Default::default(),
            raft_cut_file: None,
            retry_cache_enabled: true,
            retry_cache_expiry_ms: 600_000,
            retry_cache_heap_percent: 0.03,
            retry_cache_max_entries: None,
            edits_dirs: Vec::new(),
            required_edits_dirs: Vec::new(),
            edits_dir_minimum: 1,
            checkpoint_txns: 1_000_000,
            checkpoint_period_sec: 3600,
            checkpoints_retained: 2,
            extra_edits_retained: 1_000_000,
            journal_segment_bytes: 128 << 20,
            journal_segment_txns: 1_000_000,
            journal_prealloc_bytes: 4 << 20,
            journal_tail_bytes: 4 << 20,
            journal_group_delay_us: 1_000,
            journal_dir_timeout_ms: 20_000,
            restore_failed_dirs: false,
            recovery: Recovery::Off,
            summary_enabled: true,
            summary_checkpoint_txns: 1_000_000,
            summary_checkpoint_period_sec: 600,
            summary_wait_ms: 100,
            summary_rest_ms: 0,
            heartbeat_interval_sec: 3,
            heartbeat_recheck_ms: 300_000,
            stale_interval_ms: 30_000,
            safemode_threshold: 0.999,
            safemode_extension_ms: 30_000,
            safemode_min_datanodes: 0,
            resource_reserved_bytes: 100 << 20,
            resource_check_interval_ms: 5000,
            resource_checked_minimum: 1,
            replication_interval_sec: 3,
            block_tokens: true,
            block_key_times: ferrite_blocktoken::KeyTimes::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("bad value {value:?} for {key}: {why}")]
    BadValue {
        key: String,
        value: String,
        why: String,
    },
    #[error("--conf expects KEY=VALUE, got {0:?}")]
    BadPair(String),
    #[error("reading {path}: {source}")]
    File {
        path: PathBuf,
        #[source]
        source: SiteXmlError,
    },
}

/// A Hadoop site file that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum SiteXmlError {
    #[error(transparent)]
    Xml(#[from] quick_xml::Error),
    #[error("bad character reference: {0}")]
    CharRef(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("unknown entity &{0};")]
    UnknownEntity(String),
}

/// A comma-separated directory list; `file://` prefixes are accepted as Hadoop writes them.
fn dir_list(value: &str) -> Vec<PathBuf> {
    value
        .split(',')
        .map(|d| PathBuf::from(d.trim().trim_start_matches("file://")))
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// The heap a JVM takes by default on this machine: a quarter of its memory (4 GiB if
/// /proc/meminfo cannot be read).
pub fn default_java_heap() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(4 << 30, |kib| kib * 1024 / 4)
}

/// How many entries Hadoop's NameNode retry cache holds for a heap of `heap_bytes` and a
/// share of `percent`: its hash set gets 2^round(log2(heap × percent / 100)) bytes of
/// 8-byte references, and the cache's size limit equals that capacity. With the JVM's
/// default heap (a quarter of the machine's memory) and the default 0.03%, a 24 GiB
/// machine gives 262,144 entries. Ferrite applies the same rule so that both servers
/// remember the same number of recent calls by default.
pub fn retry_cache_capacity(heap_bytes: u64, percent: f64) -> usize {
    if percent <= 0.0 || heap_bytes == 0 {
        return 0;
    }
    let bytes = heap_bytes as f64 * percent / 100.0;
    let exponent = ((bytes.log2() + 0.5).floor() as i64 - 3).clamp(0, 30);
    1usize << exponent
}

impl Config {
    /// How many replies the retry cache keeps: `dfs.namenode.retrycache.*`, sized from
    /// the heap as HDFS sizes it unless Ferrite's cap is given; 0 when it is off.
    pub fn retry_cache_entries(&self) -> usize {
        match (self.retry_cache_enabled, self.retry_cache_max_entries) {
            (false, _) => 0,
            (true, Some(n)) => n,
            (true, None) => {
                retry_cache_capacity(default_java_heap(), self.retry_cache_heap_percent)
            }
        }
    }

    /// How long a DataNode may stay silent before it is declared dead (HDFS's formula).
    pub fn dead_interval_ms(&self) -> u64 {
        2 * self.heartbeat_recheck_ms + 10 * 1000 * self.heartbeat_interval_sec
    }

    /// Applies `pairs` on top of `self`; returns the keys that mean nothing to Ferrite.
    pub fn apply<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Vec<String>, ConfigError> {
        let mut unknown = Vec::new();
        for (key, value) in pairs {
            let v = Value { key, value };
            let known = self.proxy_users.set(key, value)
                || self.security.set(key, value)
                || self.topology.set(key, value)
                || self.hosts.set(key, value)
                || self.http.set(key, value).map_err(|why| v.bad(why))?
                || self.apply_namespace(&v)?
                || self.apply_storage(&v)?
                || self.apply_cluster(&v)?
                || self.apply_rpc(&v)?;
            if !known {
                unknown.push(key.to_string());
            }
        }
        Ok(unknown)
    }

    /// The namespace: sizes, limits, trash, permissions, access times. `Ok(false)` for a key of another group.
    fn apply_namespace(&mut self, v: &Value<'_>) -> Result<bool, ConfigError> {
        match v.key {
            "dfs.blocksize" => self.block_size = v.size()?,
            "dfs.replication" => self.replication = v.small(v.num()?)?,
            "dfs.replication.max" => self.max_replication = v.small(v.num()?)?,
            "dfs.namenode.replication.min" => self.min_replication = v.small(v.num()?)?,
            "dfs.namenode.fs-limits.min-block-size" => self.min_block_size = v.size()?,
            "dfs.namenode.fs-limits.max-directory-items" => {
                // HDFS's own bounds: at least one, at most 6.4 million.
                self.max_dir_items = match v.num()? {
                    n @ 1..=MAX_DIR_ITEMS => n as usize,
                    _ => {
                        return Err(v.bad(&format!(
                            "cannot be less than 1 or greater than {MAX_DIR_ITEMS}"
                        )))
                    }
                }
            }
            "dfs.namenode.fs-limits.max-component-length" => {
                // HDFS takes 0 for "no limit"; Ferrite cannot go past 255 (the
                // summary keeps a name's length in a byte), so it refuses rather than
                // start with a limit other than the one asked for.
                self.max_component_len = match v.num()? {
                    n @ 1..=MAX_COMPONENT_LEN => n as usize,
                    _ => {
                        return Err(v.bad(
                            "must be between 1 and 255: Ferrite keeps names of at most 255 bytes (HDFS's 0, no limit, is not supported)",
                        ))
                    }
                }
            }
            "dfs.namenode.fs-limits.max-blocks-per-file" => {
                self.max_blocks_per_file =
                    usize::try_from(v.num()?).map_err(|_| v.bad("too large"))?
            }
            "dfs.namenode.xattrs.enabled" => self.xattrs.enabled = v.boolean()?,
            "dfs.storage.policy.enabled" => self.storage_policy_enabled = v.boolean()?,
            "dfs.namenode.acls.enabled" => self.acls_enabled = v.boolean()?,
            "dfs.storage.policy.satisfier.mode" => {
                self.satisfier.enabled = match v.value.trim().to_ascii_lowercase().as_str() {
                    "external" => true,
                    "none" => false,
                    _ => return Err(v.bad("must be external or none")),
                }
            }
            "dfs.storage.policy.satisfier.max.outstanding.paths" => {
                self.satisfier.max_paths =
                    usize::try_from(v.num()?).map_err(|_| v.bad("too large"))?
            }
            "dfs.storage.policy.satisfier.retry.max.attempts" => {
                self.satisfier.max_rounds =
                    u32::try_from(v.num()?).map_err(|_| v.bad("too large"))?
            }
            "dfs.namenode.fs-limits.max-xattrs-per-inode" => {
                self.xattrs.per_inode = usize::try_from(v.num()?).map_err(|_| v.bad("too large"))?
            }
            "dfs.namenode.fs-limits.max-xattr-size" => {
                // HDFS refuses a limit above 32 KiB (its hard limit).
                self.xattrs.size = match v.num()? {
                    n @ 0..=32768 => n as usize,
                    _ => return Err(v.bad("cannot be greater than 32768")),
                }
            }
            "dfs.bytes-per-checksum" => self.bytes_per_checksum = v.num()? as u32,
            "dfs.client-write-packet-size" => self.write_packet_size = v.size()? as u32,
            "io.file.buffer.size" => self.file_buffer_size = v.size()? as u32,
            "fs.trash.interval" => self.trash_interval_min = v.num()?,
            "dfs.ls.limit" => self.ls_limit = (v.num()? as usize).max(1),
            "dfs.namenode.list.openfiles.num.responses" => {
                // HDFS refuses 0 or less.
                self.list_open_files_max = match v.num()? {
                    0 => return Err(v.bad("must be a positive integer")),
                    n => usize::try_from(n).map_err(|_| v.bad("too large"))?,
                }
            }
            "dfs.permissions.enabled" => self.permissions_enabled = v.boolean()?,
            "dfs.permissions.superusergroup" => self.superuser_group = v.value.trim().into(),
            "dfs.namenode.accesstime.precision" => self.access_time_precision_ms = v.num()?,
            "hadoop.user.group.static.mapping.overrides" => {
                self.static_groups = v.value.trim().into()
            }
            "fs.trash.checkpoint.interval" => self.trash_checkpoint_interval_min = v.num()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Where and how the NameNode keeps its state: name and journal directories, checkpoints, the journal, the summary, free-space checks. `Ok(false)` for a key of another group.
    fn apply_storage(&mut self, v: &Value<'_>) -> Result<bool, ConfigError> {
        match v.key {
            "dfs.namenode.name.dir" => self.name_dirs = dir_list(v.value),
            "dfs.namenode.edits.dir" => self.edits_dirs = dir_list(v.value),
            "dfs.namenode.edits.dir.required" => self.required_edits_dirs = dir_list(v.value),
            "dfs.namenode.edits.dir.minimum" => self.edits_dir_minimum = v.num()? as usize,
            "dfs.namenode.checkpoint.txns" => self.checkpoint_txns = v.num()?.max(1),
            "dfs.namenode.checkpoint.period" => self.checkpoint_period_sec = v.num()?.max(1),
            "dfs.namenode.num.extra.edits.retained" => self.extra_edits_retained = v.num()?,
            "dfs.namenode.num.checkpoints.retained" => {
                self.checkpoints_retained = (v.num()? as usize).max(1)
            }
            "ferrite.journal.segment.bytes" => self.journal_segment_bytes = v.size()?.max(4096),
            "ferrite.journal.segment.txns" => self.journal_segment_txns = v.num()?.max(1),
            "ferrite.journal.preallocate.bytes" => {
                self.journal_prealloc_bytes = v.size()?.max(4096)
            }
            "ferrite.journal.tail.bytes" => self.journal_tail_bytes = v.size()?,
            "ferrite.journal.group-commit.delay.us" => {
                self.journal_group_delay_us = v.num()?.min(100_000)
            }
            "ferrite.journal.dir.timeout.ms" => self.journal_dir_timeout_ms = v.num()?.max(1),
            "dfs.namenode.name.dir.restore" => self.restore_failed_dirs = v.boolean()?,
            "ferrite.summary.enabled" => self.summary_enabled = v.boolean()?,
            "ferrite.summary.checkpoint.txns" => self.summary_checkpoint_txns = v.num()?.max(1),
            "ferrite.summary.checkpoint.period" => {
                self.summary_checkpoint_period_sec = v.num()?.max(1)
            }
            "ferrite.summary.wait.ms" => self.summary_wait_ms = v.num()?,
            "ferrite.summary.rest.ms" => self.summary_rest_ms = v.num()?,
            "dfs.namenode.resource.du.reserved" => self.resource_reserved_bytes = v.size()?,
            "dfs.namenode.resource.checked.volumes.minimum" => {
                self.resource_checked_minimum = v.num()? as usize
            }
            "dfs.namenode.resource.check.interval" => {
                self.resource_check_interval_ms = v.num()?.max(1)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// DataNodes and the block map: heartbeats, liveness, safe mode, replication, leases, block recovery, block tokens. `Ok(false)` for a key of another group.
    fn apply_cluster(&mut self, v: &Value<'_>) -> Result<bool, ConfigError> {
        match v.key {
            "dfs.namenode.lease-hard-limit-sec" => self.lease_hard_limit_sec = v.num()?,
            "ferrite.namenode.block-recovery.timeout.ms" => {
                self.block_recovery_timeout_ms = v.num()?.max(1)
            }
            "dfs.heartbeat.interval" => self.heartbeat_interval_sec = v.num()?.max(1),
            "dfs.namenode.heartbeat.recheck-interval" => self.heartbeat_recheck_ms = v.num()?,
            "dfs.namenode.stale.datanode.interval" => self.stale_interval_ms = v.num()?,
            "dfs.namenode.maintenance.replication.min" => {
                self.maintenance_replication_min = v.num()? as usize
            }
            "dfs.namenode.replication.max-streams" => {
                self.replication_max_streams = (v.num()? as usize).max(1)
            }
            "dfs.namenode.replication.work.multiplier.per.iteration" => {
                self.replication_work_multiplier = (v.num()? as usize).max(1)
            }
            "dfs.namenode.safemode.threshold-pct" => {
                self.safemode_threshold = v
                    .value
                    .trim()
                    .trim_end_matches('f')
                    .parse::<f64>()
                    .map_err(|_| v.bad("expected a fraction such as 0.999"))?
            }
            "dfs.namenode.redundancy.interval.seconds" | "dfs.namenode.replication.interval" => {
                self.replication_interval_sec = v.num()?.max(1)
            }
            "dfs.namenode.safemode.extension" => self.safemode_extension_ms = v.num()?,
            "dfs.namenode.safemode.min.datanodes" => {
                self.safemode_min_datanodes = v.num()? as usize
            }
            "dfs.block.access.token.enable" => self.block_tokens = v.boolean()?,
            "dfs.block.access.key.update.interval" => {
                self.block_key_times.update_interval_ms = v.num()?.max(1) * 60_000
            }
            "dfs.block.access.token.lifetime" => {
                self.block_key_times.lifetime_ms = v.num()?.max(1) * 60_000
            }
            "ferrite.block.access.key.update.interval.ms" => {
                self.block_key_times.update_interval_ms = v.num()?.max(1)
            }
            "ferrite.block.access.token.lifetime.ms" => {
                self.block_key_times.lifetime_ms = v.num()?.max(1)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Serving clients: frame limits, the default file system, the retry cache. `Ok(false)` for a key of another group.
    fn apply_rpc(&mut self, v: &Value<'_>) -> Result<bool, ConfigError> {
        match v.key {
            "ipc.maximum.data.length" => {
                self.max_frame_len =
                    u32::try_from(v.size()?).map_err(|_| v.bad("must be below 4 GiB"))?
            }
            "ferrite.ipc.read-batch.bytes" => {
                self.read_batch_bytes =
                    u32::try_from(v.size()?).map_err(|_| v.bad("must be below 4 GiB"))?
            }
            "fs.defaultFS" | "fs.default.name" => self.default_fs = Some(v.value.trim().into()),
            k if crate::ha_config::is_ha_key(k) => {
                self.ha_keys.insert(k.to_string(), v.value.to_string());
            }
            "ferrite.ha.raft.heartbeat.ms" => {
                self.raft_timing.heartbeat = Duration::from_millis(v.num()?.max(1))
            }
            "ferrite.ha.raft.election-timeout.ms" => {
                let min = Duration::from_millis(v.num()?.max(1));
                self.raft_timing.election_min = min;
                self.raft_timing.election_max = min * 2;
            }
            "ferrite.ha.raft.snapshot.entries" => {
                self.raft_timing.snapshot_every = v.num()?.max(10)
            }
            "ferrite.ha.raft.fault.cut-file" => {
                self.raft_cut_file = Some(PathBuf::from(v.value.trim()))
            }
            "dfs.namenode.enable.retrycache" => self.retry_cache_enabled = v.boolean()?,
            "dfs.namenode.retrycache.expirytime.millis" => self.retry_cache_expiry_ms = v.num()?,
            "dfs.namenode.retrycache.heap.percent" => {
                self.retry_cache_heap_percent = v
                    .value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|p| (0.0..=100.0).contains(p))
                    .ok_or_else(|| v.bad("expected a percentage between 0 and 100"))?
            }
            "ferrite.namenode.retrycache.max-entries" => {
                self.retry_cache_max_entries = Some(v.num()? as usize)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The HA group the configuration describes, if any (a lone NameNode otherwise).
    pub fn ha_group(
        &self,
    ) -> Result<Option<crate::ha_config::HaGroup>, crate::ha_config::HaConfigError> {
        crate::ha_config::HaGroup::from_keys(&self.ha_keys)
    }

    /// Applies `--conf KEY=VALUE` strings.
    pub fn apply_cli(&mut self, pairs: &[String]) -> Result<Vec<String>, ConfigError> {
        let kv = cli_pairs(pairs)?;
        self.apply(kv.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Applies `core-site.xml` then `hdfs-site.xml` from `dir` (files that are absent are skipped).
    pub fn apply_site_dir(&mut self, dir: &Path) -> Result<Vec<String>, ConfigError> {
        let kv = site_pairs(dir)?;
        self.apply(kv.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

/// `--conf KEY=VALUE` strings as pairs. The DataNode reads the same pairs as the NameNode.
pub fn cli_pairs(pairs: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
    pairs
        .iter()
        .map(|p| {
            let (k, v) = p
                .split_once('=')
                .ok_or_else(|| ConfigError::BadPair(p.clone()))?;
            Ok((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

/// The pairs of `core-site.xml` then `hdfs-site.xml` in `dir` (absent files are skipped).
pub fn site_pairs(dir: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for name in ["core-site.xml", "hdfs-site.xml"] {
        let path = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let props = parse_site_xml(&text).map_err(|source| ConfigError::File {
            path: path.clone(),
            source,
        })?;
        out.extend(props);
    }
    Ok(out)
}

/// Reads the `<property><name/><value/></property>` pairs of a Hadoop site file.
pub fn parse_site_xml(text: &str) -> Result<BTreeMap<String, String>, SiteXmlError> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    let mut out = BTreeMap::new();
    let (mut name, mut value) = (None::<String>, None::<String>);
    // The element whose text is being collected ("name" or "value"), and that text so far.
    let mut field: Option<&'static str> = None;
    let mut buf = String::new();
    loop {
        match reader.read_event()? {
            Event::Start(e) => {
                buf.clear();
                field = match e.name().as_ref() {
                    "property" => {
                        (name, value) = (None, None);
                        None
                    }
                    "name" => Some("name"),
                    "value" => Some("value"),
                    _ => None,
                };
            }
            Event::Text(t) if field.is_some() => buf.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if field.is_some() => {
                let c = match r
                    .resolve_char_ref()
                    .map_err(|e| SiteXmlError::CharRef(Box::new(e)))?
                {
                    Some(c) => c,
                    None => match &*r {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => return Err(SiteXmlError::UnknownEntity(other.into())),
                    },
                };
                buf.push(c);
            }
            Event::End(e) => {
                match (e.name().as_ref(), field.take()) {
                    (_, Some("name")) => name = Some(buf.trim().to_string()),
                    (_, Some("value")) => value = Some(buf.trim().to_string()),
                    ("property", _) => {
                        if let Some(n) = name.take() {
                            out.insert(n, value.take().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
                buf.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// One configuration value being applied, read with HDFS's syntax for its kind.
struct Value<'a> {
    key: &'a str,
    value: &'a str,
}

impl Value<'_> {
    fn bad(&self, why: &str) -> ConfigError {
        ConfigError::BadValue {
            key: self.key.into(),
            value: self.value.into(),
            why: why.into(),
        }
    }

    fn size(&self) -> Result<u64, ConfigError> {
        parse_size(self.value).ok_or_else(|| self.bad("expected a size such as 134217728 or 128m"))
    }

    fn num(&self) -> Result<u64, ConfigError> {
        self.value
            .trim()
            .parse::<u64>()
            .map_err(|_| self.bad("expected a number"))
    }

    fn boolean(&self) -> Result<bool, ConfigError> {
        self.value
            .trim()
            .parse::<bool>()
            .map_err(|_| self.bad("expected true or false"))
    }

    fn small(&self, n: u64) -> Result<u16, ConfigError> {
        u16::try_from(n).map_err(|_| self.bad("too large"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_cache_capacity_follows_hadoops_heap_rule() {
        // A 6 GiB heap (the JVM default on a 24 GiB machine) at 0.03%: 2^18.
        assert_eq!(retry_cache_capacity(6 << 30, 0.03), 1 << 18);
        assert_eq!(retry_cache_capacity(1 << 30, 0.03), 1 << 15);
        assert_eq!(retry_cache_capacity(6 << 30, 0.0), 0);
        assert_eq!(retry_cache_capacity(1 << 40, 100.0), 1 << 30);
        assert_eq!(retry_cache_capacity(1, 0.03), 1);
    }

    #[test]
    fn raft_pace_keys() {
        let mut c = Config::default();
        let unknown = c
            .apply_cli(&[
                "ferrite.ha.raft.heartbeat.ms=50".into(),
                "ferrite.ha.raft.election-timeout.ms=300".into(),
                "ferrite.ha.raft.snapshot.entries=20".into(),
            ])
            .unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
        let t = &c.raft_timing;
        assert_eq!(t.heartbeat, Duration::from_millis(50));
        assert_eq!(t.election_min, Duration::from_millis(300));
        assert_eq!(t.election_max, Duration::from_millis(600));
        assert_eq!(t.snapshot_every, 20);
        assert!(c
            .apply_cli(&["ferrite.ha.raft.snapshot.entries=soon".into()])
            .is_err());
    }

    #[test]
    fn cli_pairs_and_unknown_keys() {
        let mut c = Config::default();
        let unknown = c
            .apply_cli(&[
                "fs.trash.interval=5".into(),
                "dfs.blocksize=64m".into(),
                "foo.bar=1".into(),
                "dfs.namenode.accesstime.precision=0".into(),
                "ferrite.ipc.read-batch.bytes=8k".into(),
            ])
            .unwrap();
        assert_eq!(Config::default().access_time_precision_ms, 3_600_000);
        assert_eq!(Config::default().read_batch_bytes, 4096);
        assert_eq!(c.read_batch_bytes, 8192);
        assert_eq!(c.access_time_precision_ms, 0);
        assert_eq!(c.trash_interval_min, 5);
        assert_eq!(c.block_size, 64 << 20);
        assert_eq!(unknown, vec!["foo.bar".to_string()]);
        assert!(c.apply_cli(&["novalue".into()]).is_err());
        assert!(c.apply_cli(&["dfs.replication=lots".into()]).is_err());
    }

    #[test]
    fn namespace_limits_within_hdfs_bounds() {
        let key = "dfs.namenode.fs-limits.max-directory-items";
        let mut c = Config::default();
        assert_eq!(c.max_dir_items, 1_048_576);
        c.apply_cli(&[format!("{key}=6400000")]).unwrap();
        assert_eq!(c.max_dir_items, 6_400_000);
        for bad in ["0", "6400001", "-1"] {
            let e = c.apply_cli(&[format!("{key}={bad}")]).unwrap_err();
            assert!(e.to_string().contains(key), "{e}");
        }
        assert_eq!(c.max_dir_items, 6_400_000);
        assert_eq!(c.max_blocks_per_file, 10_000);
        c.apply_cli(&["dfs.namenode.fs-limits.max-blocks-per-file=3".into()])
            .unwrap();
        assert_eq!(c.max_blocks_per_file, 3);
        let key = "dfs.namenode.fs-limits.max-component-length";
        assert_eq!(c.max_component_len, 255);
        c.apply_cli(&[format!("{key}=8")]).unwrap();
        assert_eq!(c.max_component_len, 8);
        for bad in ["0", "256"] {
            let e = c.apply_cli(&[format!("{key}={bad}")]).unwrap_err();
            assert!(e.to_string().contains("between 1 and 255"), "{e}");
        }
        assert_eq!(c.max_component_len, 8);
    }

    #[test]
    fn site_xml() {
        let xml = r#"<?xml version="1.0"?><configuration>
            <property><name>fs.defaultFS</name><value>hdfs://127.0.0.1:9000</value></property>
            <property><name>dfs.ls.limit</name><value> 10 </value></property><property><name>a.b</name><value>x &amp; y</value><description>x</description></property>
        </configuration>"#;
        let props = parse_site_xml(xml).unwrap();
        assert_eq!(props["fs.defaultFS"], "hdfs://127.0.0.1:9000");
        assert_eq!(props["a.b"], "x & y");
        let mut c = Config::default();
        c.apply(props.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap();
        assert_eq!(c.ls_limit, 10);
    }
}
