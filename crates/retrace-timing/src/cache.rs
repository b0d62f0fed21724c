//! A set-associative cache with true LRU replacement (tags only: timing needs
//! hit or miss, not data).

use crate::model::CacheModel;

/// Cache tag state and hit/miss counters.
#[derive(Clone, Debug)]
pub struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    /// `sets × ways` line numbers, most recently used first within a set;
    /// `u64::MAX` marks an empty way.
    tags: Vec<u64>,
    /// The last line accessed: a repeat is a hit that changes nothing (the
    /// line is already most recent), so it skips the search.
    last_line: u64,
    /// Hits so far.
    pub hits: u64,
    /// Misses so far.
    pub misses: u64,
}

impl Cache {
    /// An empty cache of this geometry.
    pub fn new(model: &CacheModel) -> Cache {
        Cache {
            line_shift: model.line.trailing_zeros(),
            set_mask: u64::from(model.sets()) - 1,
            ways: model.ways as usize,
            tags: vec![u64::MAX; (model.sets() * model.ways) as usize],
            last_line: u64::MAX,
            hits: 0,
            misses: 0,
        }
    }

    /// The line number of an address.
    #[inline(always)]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// Access `addr`; returns whether it hit. A miss fills the line, evicting
    /// the least recently used line of its set.
    #[inline(always)]
    pub fn access(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        // Most accesses repeat the previous line (sequential fetch, stack
        // slots): that check is inlined into the caller, the search is not.
        if line == self.last_line {
            self.hits += 1;
            return true;
        }
        self.access_other(line)
    }

    /// Whether the line of `addr` is in the cache (changes nothing).
    #[inline]
    pub fn holds(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let set = (line & self.set_mask) as usize * self.ways;
        self.tags[set..set + self.ways].contains(&line)
    }

    #[inline(never)]
    fn access_other(&mut self, line: u64) -> bool {
        self.last_line = line;
        let set = (line & self.set_mask) as usize * self.ways;
        let ways = &mut self.tags[set..set + self.ways];
        if ways[0] == line {
            self.hits += 1;
            return true;
        }
        // Ways in recency order: move the hit (or the new line, over the
        // least recent) to the front. An element loop, not
        // `rotate_right`, which calls out to `memmove` for these few words.
        let (at, hit) = match ways.iter().position(|&t| t == line) {
            Some(i) => (i, true),
            None => (ways.len() - 1, false),
        };
        for k in (1..=at).rev() {
            ways[k] = ways[k - 1];
        }
        ways[0] = line;
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain LRU model: a list of lines per set, most recent
        /// first.
        #[test]
        fn matches_a_reference_lru(
            shape in (0u32..3, 0u32..4, 0u32..4),
            addrs in proptest::collection::vec(0u64..4096, 0..400),
        ) {
            let (ways, sets, line) = (1u32 << shape.0, 1u32 << shape.1, 4u32 << shape.2);
            let model = CacheModel { size: ways * sets * line, ways, line, miss_penalty: 1 };
            let mut c = Cache::new(&model);
            let mut reference: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
            for a in addrs {
                let l = a / u64::from(line);
                let set = &mut reference[(l % u64::from(sets)) as usize];
                let hit = match set.iter().position(|&t| t == l) {
                    Some(i) => { set.remove(i); true }
                    None => { set.truncate(ways as usize - 1); false }
                };
                set.insert(0, l);
                prop_assert_eq!(c.access(a), hit, "address {:#x}", a);
            }
        }
    }

    #[test]
    fn lru_evicts_least_recent() {
        // 2 sets × 2 ways × 16-byte lines.
        let mut c = Cache::new(&CacheModel {
            size: 64,
            ways: 2,
            line: 16,
            miss_penalty: 10,
        });
        assert!(!c.access(0x000)); // line 0 → set 0
        assert!(!c.access(0x020)); // line 2 → set 0
        assert!(c.access(0x004)); // line 0 again: hit, now MRU
        assert!(!c.access(0x040)); // line 4 → set 0: evicts line 2
        assert!(c.access(0x000));
        assert!(!c.access(0x020));
        assert_eq!((c.hits, c.misses), (2, 4));
    }
}
