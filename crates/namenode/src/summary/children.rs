//! A summary directory's entries, kept compactly.
//!
//! The summary mirrors every file of the namespace, so the cost of one file entry is most
//! of its memory. A file is a 12-byte slot: where its name sits in the directory's name
//! buffer, its replication and its length (up to 4 GiB; a longer one's length sits in a
//! side map). A subdirectory is a 12-byte slot holding its place in the tree's arena.
//! Names sit back to back in one buffer per directory. Up to [`FEW`] entries are found by
//! scanning the slots (lengths compared first); above that a hash table of 4-byte slot
//! numbers indexes them. The block lengths of files open for write, a handful at a time,
//! sit in the side map too (a file open with no block yet needs only its flag), so a
//! closed file of under 4 GiB pays nothing there.
//!
//! Buffers grow exactly while a directory is small (most stay small) and by an eighth
//! once it is big, so a big directory's slack stays near 6% instead of doubling's 25–50%,
//! while growth stays amortized O(1). A removed name leaves a gap in the name buffer; the
//! buffer is rewritten once gaps are most of it. (The layout before this one, a 32-byte
//! entry in a hash table at its load factor, cost ~76 bytes per file.)

use std::collections::HashMap;

use hashbrown::HashTable;

/// A directory's place in the tree's arena (see `arena.rs`).
pub(super) type DirId = u32;

/// A file taken out of (or going into) a directory's [`Children`], which keep it packed.
pub struct File {
    pub len: u64,
    pub repl: u16,
    /// While open for write, the recorded length of each block (the namespace's rule for
    /// how an added or abandoned block changes the file's length needs the last one).
    pub open: Option<Vec<u64>>,
}

/// An entry outside a directory's children: taken out by a delete or rename, or being
/// added. A directory stays in the tree's arena meanwhile, unlinked.
pub enum Node {
    Dir(DirId),
    File(File),
}

impl Node {
    pub fn as_ref(&self) -> NodeRef<'_> {
        match self {
            Node::Dir(d) => NodeRef::Dir(*d),
            Node::File(f) => NodeRef::File(FileView {
                len: f.len,
                repl: f.repl,
                open: f.open.as_deref(),
            }),
        }
    }
}

type Fold = foldhash::fast::RandomState;

/// The most entries found by scanning. A scan of 16 slots (lengths compared first) costs
/// about what hashing one name does.
const FEW: usize = 16;

/// Marks a table value as a subdirectory's slot number (else it is a file's).
const DIR_BIT: u32 = 1 << 31;

/// Longest name a slot can hold: the namespace's component limit.
pub const MAX_NAME: usize = u8::MAX as usize;

struct FileSlot {
    at: u32,
    name_len: u8,
    /// [`OPEN`] and [`BIG`].
    flags: u8,
    repl: u16,
    /// The length, unless [`BIG`].
    len: u32,
}

/// The file is open for write: its block lengths are in [`Side::open`].
const OPEN: u8 = 1;
/// The file is 4 GiB or longer: its length is in [`Side::big`].
const BIG: u8 = 2;

/// What a few files need beyond their slot, by their name's offset.
#[derive(Default)]
struct Side {
    /// Block lengths of the files open for write.
    open: HashMap<u32, Vec<u64>>,
    /// Lengths of the files of 4 GiB and more.
    big: HashMap<u32, u64>,
}

struct DirSlot {
    at: u32,
    name_len: u8,
    dir: DirId,
}

/// A file as the summary holds it, read-only.
#[derive(Clone, Copy, Debug)]
pub struct FileView<'a> {
    pub len: u64,
    pub repl: u16,
    /// While open for write, each block's recorded length.
    pub open: Option<&'a [u64]>,
}

pub enum NodeRef<'a> {
    Dir(DirId),
    File(FileView<'a>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pos {
    File(usize),
    Dir(usize),
}

/// Which kind of entry a lookup expects to find.
#[derive(Clone, Copy)]
enum Expect {
    File,
    Dir,
}

impl Pos {
    fn encode(self) -> u32 {
        match self {
            Pos::File(i) => i as u32,
            Pos::Dir(i) => i as u32 | DIR_BIT,
        }
    }

    fn decode(v: u32) -> Pos {
        if v & DIR_BIT != 0 {
            Pos::Dir((v & !DIR_BIT) as usize)
        } else {
            Pos::File(v as usize)
        }
    }
}

#[derive(Default)]
pub struct Children {
    names: String,
    /// Bytes of `names` no slot points at any more.
    garbage: usize,
    files: Vec<FileSlot>,
    dirs: Vec<DirSlot>,
    /// Boxed: most directories have no open or big file, and the box costs them 8 bytes
    /// where the maps cost 96.
    side: Option<Box<Side>>,
    index: Option<Box<Table>>,
}

/// Past this many entries a directory's table is split in [`PARTS`] by hash, so that
/// growing re-hashes one part's names instead of all of them. Growth re-hashes by reading
/// each entry's name again: filling one directory with a million files, the doubling past
/// 917,504 entries took 110 ms (37 ms past 458,752), all on the summary's thread while it
/// holds the summary's lock, so every content summary waited for it.
const SPLIT_AT: usize = 8192;
const PARTS: usize = 64;

struct Table {
    /// One table, or [`PARTS`] once the directory has passed [`SPLIT_AT`] entries.
    parts: Vec<HashTable<u32>>,
    hasher: Fold,
}

impl Table {
    fn with_capacity(capacity: usize) -> Table {
        let parts = if capacity > SPLIT_AT {
            (0..PARTS)
                .map(|_| HashTable::with_capacity(capacity / PARTS + 1))
                .collect()
        } else {
            vec![HashTable::with_capacity(capacity)]
        };
        Table {
            parts,
            hasher: Fold::default(),
        }
    }

    /// The part a hash falls in: bits hashbrown uses neither for the bucket (the low ones)
    /// nor for the control byte (the top seven), so each part stays evenly spread.
    fn part(&self, h: u64) -> usize {
        (h >> 32) as usize & (self.parts.len() - 1)
    }

    fn find(&self, h: u64, eq: impl FnMut(&u32) -> bool) -> Option<&u32> {
        self.parts[self.part(h)].find(h, eq)
    }

    fn find_mut(&mut self, h: u64, eq: impl FnMut(&u32) -> bool) -> Option<&mut u32> {
        let p = self.part(h);
        self.parts[p].find_mut(h, eq)
    }

    fn remove(&mut self, h: u64, v: u32) {
        let p = self.part(h);
        if let Ok(e) = self.parts[p].find_entry(h, |&x| x == v) {
            e.remove();
        }
    }

    fn insert(&mut self, h: u64, v: u32, keys: Keys) {
        let p = self.part(h);
        let hasher = &self.hasher;
        self.parts[p].insert_unique(h, v, |&x| hash(hasher, keys.name(Pos::decode(x))));
        if self.parts.len() == 1 && self.parts[0].len() > SPLIT_AT {
            self.split(keys);
        }
    }

    fn reserve(&mut self, n: usize, keys: Keys) {
        let per_part = n / self.parts.len() + 1;
        let hasher = &self.hasher;
        for t in &mut self.parts {
            t.reserve(per_part, |&x| hash(hasher, keys.name(Pos::decode(x))));
        }
    }

    /// Moves the one table's entries into [`PARTS`] tables (a one-off re-hash of
    /// [`SPLIT_AT`] names).
    fn split(&mut self, keys: Keys) {
        let one = std::mem::take(&mut self.parts).pop().expect("one table");
        let mut split = Table {
            hasher: std::mem::take(&mut self.hasher),
            ..Table::with_capacity(2 * one.len())
        };
        for v in one {
            let h = hash(&split.hasher, keys.name(Pos::decode(v)));
            split.insert(h, v, keys);
        }
        *self = split;
    }
}

/// The slots and names, borrowed apart from the table so its closures can read names.
#[derive(Clone, Copy)]
struct Keys<'a> {
    names: &'a str,
    files: &'a [FileSlot],
    dirs: &'a [DirSlot],
}

impl<'a> Keys<'a> {
    fn name(&self, p: Pos) -> &'a str {
        let (at, len) = match p {
            Pos::File(i) => (self.files[i].at, self.files[i].name_len),
            Pos::Dir(i) => (self.dirs[i].at, self.dirs[i].name_len),
        };
        &self.names[at as usize..at as usize + len as usize]
    }
}

fn hash(hasher: &Fold, name: &str) -> u64 {
    std::hash::BuildHasher::hash_one(hasher, name)
}

/// Room for one more element: exactly one while small, an eighth more once big.
fn grow<T>(v: &mut Vec<T>) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 8 + 1);
    }
}

/// Gives back most of a buffer that removals left mostly empty.
fn shrink<T>(v: &mut Vec<T>) {
    if v.capacity() > 64 && v.len() < v.capacity() / 4 {
        v.shrink_to(v.len() + v.len() / 8);
    }
}

impl Children {
    pub fn len(&self) -> usize {
        self.files.len() + self.dirs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Files directly in this directory.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Subdirectories directly in this directory.
    pub fn dir_count(&self) -> usize {
        self.dirs.len()
    }

    fn keys(&self) -> Keys<'_> {
        Keys {
            names: &self.names,
            files: &self.files,
            dirs: &self.dirs,
        }
    }

    /// Room for `n` more entries (a checkpoint being loaded knows how many follow).
    pub fn reserve(&mut self, n: usize) {
        if self.len() + n <= FEW {
            return;
        }
        let keys = Keys {
            names: &self.names,
            files: &self.files,
            dirs: &self.dirs,
        };
        match &mut self.index {
            Some(t) => t.reserve(n, keys),
            None => self.build_index(self.len() + n),
        }
    }

    /// Indexes every slot in a new table (once the directory outgrows [`FEW`]).
    fn build_index(&mut self, capacity: usize) {
        let mut t = Table::with_capacity(capacity);
        let keys = self.keys();
        let all = (0..self.files.len())
            .map(Pos::File)
            .chain((0..self.dirs.len()).map(Pos::Dir));
        for p in all {
            let h = hash(&t.hasher, keys.name(p));
            t.insert(h, p.encode(), keys);
        }
        self.index = Some(Box::new(t));
    }

    fn find(&self, name: &str) -> Option<Pos> {
        self.find_expecting(name, Expect::File)
    }

    /// Finds `name`; without an index, the slots of the kind `expect`ed are scanned first
    /// (a walk down a path looks for directories, and a directory's files often fill most
    /// of its slots).
    fn find_expecting(&self, name: &str, expect: Expect) -> Option<Pos> {
        let keys = self.keys();
        if let Some(t) = &self.index {
            let h = hash(&t.hasher, name);
            let v = t.find(h, |&v| keys.name(Pos::decode(v)) == name)?;
            return Some(Pos::decode(*v));
        }
        let n = u8::try_from(name.len()).ok()?;
        // Siblings' names tend to share a prefix and a length (`part-00001`, `part-00002`),
        // and differ at the end: the last byte, compared inline, turns away most of them
        // before a full comparison.
        let (names, name) = (keys.names.as_bytes(), name.as_bytes());
        let last = *name.last()?;
        let hit = |at: u32, len: u8| {
            let at = at as usize;
            len == n && names[at + n as usize - 1] == last && &names[at..at + n as usize] == name
        };
        let file = || {
            let i = self.files.iter().position(|f| hit(f.at, f.name_len));
            i.map(Pos::File)
        };
        let dir = || {
            let i = self.dirs.iter().position(|d| hit(d.at, d.name_len));
            i.map(Pos::Dir)
        };
        match expect {
            Expect::File => file().or_else(dir),
            Expect::Dir => dir().or_else(file),
        }
    }

    fn view(&self, f: &FileSlot) -> FileView<'_> {
        let side = self.side.as_deref();
        let len = match side.and_then(|s| s.big.get(&f.at)) {
            Some(&len) if f.flags & BIG != 0 => len,
            _ => u64::from(f.len),
        };
        let blocks = side.and_then(|s| s.open.get(&f.at));
        FileView {
            len,
            repl: f.repl,
            open: (f.flags & OPEN != 0).then(|| blocks.map_or(&[][..], |b| b.as_slice())),
        }
    }

    fn node_at(&self, p: Pos) -> NodeRef<'_> {
        match p {
            Pos::File(i) => NodeRef::File(self.view(&self.files[i])),
            Pos::Dir(i) => NodeRef::Dir(self.dirs[i].dir),
        }
    }

    pub fn get(&self, name: &str) -> Option<NodeRef<'_>> {
        Some(self.node_at(self.find(name)?))
    }

    /// Looks `name` up for a walk down a path, which expects a directory.
    pub fn get_dir(&self, name: &str) -> Option<NodeRef<'_>> {
        Some(self.node_at(self.find_expecting(name, Expect::Dir)?))
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Runs `f` on the file `name`; `None` if there is no such file.
    pub fn update_file<R>(&mut self, name: &str, f: impl FnOnce(&mut File) -> R) -> Option<R> {
        let Pos::File(i) = self.find(name)? else {
            return None;
        };
        let (at, name_len) = (self.files[i].at, self.files[i].name_len);
        let mut file = self.unpack(i);
        let out = f(&mut file);
        self.files[i] = self.pack(at, name_len, file);
        Some(out)
    }

    /// The file in slot `i` as an owned [`File`]; its side entries are taken out.
    fn unpack(&mut self, i: usize) -> File {
        let slot = &self.files[i];
        let (at, flags) = (slot.at, slot.flags);
        let mut file = File {
            len: u64::from(slot.len),
            repl: slot.repl,
            open: None,
        };
        if let Some(side) = &mut self.side {
            if flags & BIG != 0 {
                file.len = side.big.remove(&at).unwrap_or_default();
            }
            if flags & OPEN != 0 {
                file.open = Some(side.open.remove(&at).unwrap_or_default());
            }
            if side.open.is_empty() && side.big.is_empty() {
                self.side = None;
            }
        } else if flags & OPEN != 0 {
            file.open = Some(Vec::new());
        }
        file
    }

    /// The slot for `file` named at `at`, its side entries stored.
    fn pack(&mut self, at: u32, name_len: u8, file: File) -> FileSlot {
        let mut slot = FileSlot {
            at,
            name_len,
            flags: 0,
            repl: file.repl,
            len: 0,
        };
        match u32::try_from(file.len) {
            Ok(len) => slot.len = len,
            Err(_) => {
                slot.flags |= BIG;
                self.side.get_or_insert_default().big.insert(at, file.len);
            }
        }
        if let Some(blocks) = file.open {
            slot.flags |= OPEN;
            // A file just created has no block: its flag says all there is, and a create
            // followed by a close then costs the side map nothing (it made and dropped a
            // map and its box per file before).
            if !blocks.is_empty() {
                self.side.get_or_insert_default().open.insert(at, blocks);
            }
        }
        slot
    }

    /// Adds or replaces `name`'s node; returns the one replaced. Names are path components,
    /// at most [`MAX_NAME`] bytes (the namespace refuses longer ones).
    pub fn insert(&mut self, name: &str, node: Node) -> Option<Node> {
        let old = self.remove(name);
        let name_len = u8::try_from(name.len()).expect("a path component of at most 255 bytes");
        let at = self.push_name(name);
        let pos = match node {
            Node::File(f) => {
                let slot = self.pack(at, name_len, f);
                grow(&mut self.files);
                self.files.push(slot);
                Pos::File(self.files.len() - 1)
            }
            Node::Dir(dir) => {
                grow(&mut self.dirs);
                self.dirs.push(DirSlot { at, name_len, dir });
                Pos::Dir(self.dirs.len() - 1)
            }
        };
        if let Some(t) = &mut self.index {
            let keys = Keys {
                names: &self.names,
                files: &self.files,
                dirs: &self.dirs,
            };
            let h = hash(&t.hasher, name);
            t.insert(h, pos.encode(), keys);
        } else if self.len() > FEW {
            self.build_index(self.len());
        }
        old
    }

    /// Appends `name` to the name buffer; returns its offset.
    fn push_name(&mut self, name: &str) -> u32 {
        let at = u32::try_from(self.names.len())
            .ok()
            .filter(|at| at.checked_add(name.len() as u32).is_some())
            .expect("a directory's names fit in 4 GiB");
        if self.names.capacity() - self.names.len() < name.len() {
            let more = if self.len() < FEW {
                name.len()
            } else {
                name.len().max(self.names.len() / 8)
            };
            self.names.reserve_exact(more);
        }
        self.names.push_str(name);
        at
    }

    pub fn remove(&mut self, name: &str) -> Option<Node> {
        let pos = self.find(name)?;
        if let Some(t) = &mut self.index {
            let h = hash(&t.hasher, name);
            t.remove(h, pos.encode());
        }
        let (name_len, node) = match pos {
            Pos::File(i) => {
                let node = Node::File(self.unpack(i));
                (self.files.swap_remove(i).name_len, node)
            }
            Pos::Dir(i) => {
                let d = self.dirs.swap_remove(i);
                (d.name_len, Node::Dir(d.dir))
            }
        };
        self.reindex_moved(pos);
        if self.is_empty() {
            // Nothing left: give back the buffers and the table too.
            *self = Children::default();
            return Some(node);
        }
        shrink(&mut self.files);
        shrink(&mut self.dirs);
        self.garbage += usize::from(name_len);
        if self.garbage > 4096 && self.garbage * 2 > self.names.len() {
            self.compact();
        }
        Some(node)
    }

    /// After `swap_remove` at `hole`, the last slot of that kind sits there: its table
    /// value becomes the hole's.
    fn reindex_moved(&mut self, hole: Pos) {
        let (moved_from, now) = match hole {
            Pos::File(i) if i < self.files.len() => (Pos::File(self.files.len()), hole),
            Pos::Dir(i) if i < self.dirs.len() => (Pos::Dir(self.dirs.len()), hole),
            _ => return,
        };
        let keys = Keys {
            names: &self.names,
            files: &self.files,
            dirs: &self.dirs,
        };
        if let Some(t) = &mut self.index {
            let h = hash(&t.hasher, keys.name(now));
            if let Some(v) = t.find_mut(h, |&v| v == moved_from.encode()) {
                *v = now.encode();
            }
        }
    }

    /// Rewrites the name buffer without its gaps (and the side map's keys with it).
    fn compact(&mut self) {
        let old = std::mem::take(&mut self.names);
        let mut names = String::with_capacity(old.len() - self.garbage);
        let mut moved = |at: &mut u32, len: u8| {
            let new = names.len() as u32;
            names.push_str(&old[*at as usize..*at as usize + usize::from(len)]);
            std::mem::replace(at, new)
        };
        let mut side = self.side.take();
        let mut new_side = Side::default();
        for f in &mut self.files {
            let was = moved(&mut f.at, f.name_len);
            if let Some(s) = side.as_deref_mut() {
                if let Some(len) = s.big.remove(&was) {
                    new_side.big.insert(f.at, len);
                }
                if let Some(blocks) = s.open.remove(&was) {
                    new_side.open.insert(f.at, blocks);
                }
            }
        }
        for d in &mut self.dirs {
            moved(&mut d.at, d.name_len);
        }
        let used = !new_side.big.is_empty() || !new_side.open.is_empty();
        self.side = used.then(|| Box::new(new_side));
        self.names = names;
        self.garbage = 0;
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, NodeRef<'_>)> {
        let keys = self.keys();
        let files = (0..self.files.len()).map(Pos::File);
        let dirs = (0..self.dirs.len()).map(Pos::Dir);
        files
            .chain(dirs)
            .map(move |p| (keys.name(p), self.node_at(p)))
    }

    pub fn values(&self) -> impl Iterator<Item = NodeRef<'_>> {
        self.iter().map(|(_, n)| n)
    }

    /// The subdirectories alone, with their names: a walk of the directory tree need not
    /// look at a single file.
    pub fn subdirs(&self) -> impl Iterator<Item = (&str, DirId)> {
        let keys = self.keys();
        (0..self.dirs.len()).map(move |i| (keys.name(Pos::Dir(i)), self.dirs[i].dir))
    }

    /// Empties the directory, handing out every (name, node).
    pub fn drain(&mut self) -> Vec<(String, Node)> {
        let mut all = std::mem::take(self);
        let mut out = Vec::with_capacity(all.len());
        for i in 0..all.files.len() {
            let f = &all.files[i];
            let name = all.names[f.at as usize..][..usize::from(f.name_len)].to_string();
            out.push((name, Node::File(all.unpack(i))));
        }
        for d in std::mem::take(&mut all.dirs) {
            let name = all.names[d.at as usize..][..usize::from(d.name_len)].to_string();
            out.push((name, Node::Dir(d.dir)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(len: u64) -> Node {
        Node::File(File {
            len,
            repl: 1,
            open: None,
        })
    }

    fn dir(perm: u16) -> Node {
        // Any number stands for an arena slot here: the figure reads it back.
        Node::Dir(DirId::from(perm))
    }

    /// A node's figure for comparison: a file's length, a directory's slot + 1,000,000.
    fn figure(n: NodeRef) -> u64 {
        match n {
            NodeRef::File(f) => f.len,
            NodeRef::Dir(d) => 1_000_000 + u64::from(d),
        }
    }

    fn owned_figure(n: &Node) -> u64 {
        match n {
            Node::File(f) => f.len,
            Node::Dir(d) => 1_000_000 + u64::from(*d),
        }
    }

    #[test]
    fn slots_are_small() {
        assert_eq!(std::mem::size_of::<FileSlot>(), 12);
        assert_eq!(std::mem::size_of::<DirSlot>(), 12);
    }

    #[test]
    fn behaves_as_a_map_through_removals_and_compaction() {
        // Enough churn to compact the name buffer several times, with a table.
        behaves_as_a_map(2000);
    }

    #[test]
    fn a_big_directory_behaves_as_a_map_across_the_table_split() {
        // Grows past SPLIT_AT entries (five rounds of 4,000, a third removed each time).
        behaves_as_a_map(4000);
    }

    #[test]
    fn small_directories_behave_as_a_map_as_a_list_and_across_the_switch() {
        for n in [3, FEW - 1, FEW, FEW + 1, 3 * FEW] {
            behaves_as_a_map(n as u64);
        }
    }

    /// Five rounds of `n` inserts (files and directories mixed) then removal of every
    /// third, checked against a map; removals move slots, so lookups after them check that
    /// the table followed.
    fn behaves_as_a_map(n: u64) {
        let mut c = Children::default();
        let mut model = std::collections::HashMap::new();
        for round in 0..5u64 {
            for i in 0..n {
                let name = format!("f-{round}-{i}");
                let node = if i % 4 == 1 { dir(i as u16) } else { file(i) };
                let want = owned_figure(&node);
                assert!(c.insert(&name, node).is_none());
                model.insert(name, want);
            }
            for i in (0..n).step_by(3) {
                let name = format!("f-{round}-{i}");
                let got = c.remove(&name).map(|n| owned_figure(&n));
                assert_eq!(got, model.remove(&name), "{name}");
            }
            assert_eq!(c.len(), model.len());
            for (name, want) in &model {
                assert_eq!(c.get(name).map(figure), Some(*want), "{name}");
            }
        }
        assert!(c.garbage * 2 <= c.names.len() || c.garbage <= 4096);
        // Replacing keeps one entry, even across kinds; iteration sees every name once.
        let old = c.insert("f-0-2", dir(7)).map(|n| owned_figure(&n));
        assert_eq!(old, model.get("f-0-2").copied());
        model.insert("f-0-2".into(), 1_000_007);
        assert_eq!(c.len(), model.len());
        assert_eq!(c.get("f-0-2").map(figure), Some(1_000_007));
        let counts = (c.file_count(), c.dir_count());
        let dirs = model.values().filter(|v| **v >= 1_000_000).count();
        assert_eq!(counts, (model.len() - dirs, dirs));
        let mut seen: Vec<(String, u64)> =
            c.iter().map(|(n, v)| (n.to_string(), figure(v))).collect();
        seen.sort();
        let mut want: Vec<(String, u64)> = model.iter().map(|(n, v)| (n.clone(), *v)).collect();
        want.sort();
        assert_eq!(seen, want);
        assert!(c.remove("nope").is_none() && !c.contains_key("nope"));
        let drained = c.drain();
        assert_eq!(drained.len(), model.len());
        assert!(c.is_empty());
    }

    #[test]
    fn files_of_4_gib_and_more_keep_their_length_through_moves_and_compaction() {
        let mut c = Children::default();
        let big = 5u64 << 32;
        c.insert("big", file(big));
        c.insert("edge", file(u64::from(u32::MAX)));
        for i in 0..3000 {
            c.insert(&format!("churn-{i:05}"), file(i));
        }
        for i in 0..3000 {
            c.remove(&format!("churn-{i:05}"));
        }
        let len = |c: &Children, n| match c.get(n) {
            Some(NodeRef::File(f)) => f.len,
            _ => panic!("{n} is a file"),
        };
        assert_eq!(
            (len(&c, "big"), len(&c, "edge")),
            (big, u64::from(u32::MAX))
        );
        // Shrinking below 4 GiB leaves the side map; growing past it goes back.
        c.update_file("big", |f| f.len = 7);
        assert!(c.side.is_none());
        c.update_file("edge", |f| f.len += 1);
        assert_eq!(len(&c, "edge"), 1 << 32);
        let drained: Vec<u64> = c.drain().iter().map(|(_, n)| owned_figure(n)).collect();
        assert!(drained.contains(&(1 << 32)) && drained.contains(&7));
    }

    #[test]
    fn open_files_keep_their_blocks_through_updates_moves_and_compaction() {
        let mut c = Children::default();
        let open = |blocks: Vec<u64>| {
            Node::File(File {
                len: blocks.iter().sum(),
                repl: 3,
                open: Some(blocks),
            })
        };
        c.insert("w", open(vec![5, 0]));
        // Enough churn around it to move its slot and compact the names.
        for i in 0..3000 {
            c.insert(&format!("churn-{i:05}"), file(i));
        }
        c.update_file("w", |f| f.open.as_mut().unwrap().push(9));
        for i in 0..3000 {
            c.remove(&format!("churn-{i:05}"));
        }
        match c.get("w") {
            Some(NodeRef::File(f)) => assert_eq!(f.open, Some(&[5, 0, 9][..])),
            _ => panic!("w is a file"),
        }
        c.update_file("w", |f| f.open = None);
        assert!(
            c.side.is_none(),
            "a closed file leaves nothing in the side map"
        );
        assert!(c.update_file("nope", |_| ()).is_none());
        c.insert("d", dir(1));
        assert!(
            c.update_file("d", |_| ()).is_none(),
            "a directory is not a file"
        );
        match c.remove("w") {
            Some(Node::File(f)) => assert_eq!((f.len, f.open), (5, None)),
            _ => panic!("w is a file"),
        }
    }
}
