//! Maps and sets keyed by the namespace's own values (slots, ids): a fast hash, with no
//! denial-of-service concern since no key comes from a client.

pub(super) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(super) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
