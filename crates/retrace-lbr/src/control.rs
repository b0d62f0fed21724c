//! The branch control program (JP2024157581A claims 2–4): reads pairs from
//! the buffer and runs, for each, the *code block* that stands for it.
//!
//! A hash table maps a pair to its block; a pair seen for the first time
//! gets a new block, made by copying the template block into an executable
//! region, and the (block address ↔ pair) entry is added to the *code-block
//! information*. Every block is the same machine code (a short counted
//! loop), so every pair costs the control program the same time and an
//! instruction-address sample lands in a block in proportion to how often
//! its pair occurred. [`Mode::Exact`] counts pairs in the hash table
//! instead, with no blocks: the reference that measures the sampling error.

use crate::ring::Ring;
use crate::Error;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Bytes per code block: blocks sit at `region + 16 * index`, so a sampled
/// address maps to its block by one division.
pub const BLOCK_BYTES: usize = 16;

/// The template block, x86-64:
/// ```text
/// b9 nn nn nn nn   mov ecx, spin
/// ff c9            1: dec ecx
/// 75 fc            jnz 1b
/// c3               ret
/// cc ...           int3 padding to 16 bytes
/// ```
/// The loop makes the block long enough that samples land in it rather
/// than in the reading and hashing around it.
fn template(spin: u32) -> [u8; BLOCK_BYTES] {
    let s = spin.max(1).to_le_bytes();
    [
        0xb9, s[0], s[1], s[2], s[3], 0xff, 0xc9, 0x75, 0xfc, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
        0xcc,
    ]
}

/// Offsets in a block whose samples count: the loop (`dec`, `jnz`). A
/// sample at the block's first instruction is left out: that is where the
/// time lands when the CPU mispredicted the call into the block, which
/// costs more for pairs that arrive in a less regular order, so counting
/// it would favour them. (On the machine this was built on such samples
/// were rare, and leaving them out changed the error little.)
pub const COUNTED: std::ops::Range<u64> = 5..9;

/// How the control program consumes pairs.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Count each pair in the hash table (no code blocks, no sampling).
    Exact,
    /// Run one code block per pair; `spin` iterations of the template's
    /// loop. `also_exact` keeps exact counts too, to measure the sampling
    /// error in the same run.
    Blocks {
        /// Loop iterations per block.
        spin: u32,
        /// Count pairs exactly as well.
        also_exact: bool,
    },
}

/// An executable region of identical code blocks.
pub struct CodeRegion {
    base: *mut u8,
    capacity: usize,
    used: usize,
    template: [u8; BLOCK_BYTES],
}

impl CodeRegion {
    /// Reserve room for `capacity` blocks (pages are touched only when used).
    pub fn new(capacity: usize, spin: u32) -> Result<CodeRegion, Error> {
        let len = capacity * BLOCK_BYTES;
        // SAFETY: an anonymous private mapping; checked below. Writable and
        // executable at once because blocks are added while others run in
        // the same thread; nothing but the template is ever written.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::os("mmap of an executable region for code blocks"));
        }
        Ok(CodeRegion {
            base: base.cast(),
            capacity,
            used: 0,
            template: template(spin),
        })
    }

    /// Address of the first block.
    pub fn base(&self) -> u64 {
        self.base as u64
    }

    /// Bytes reserved.
    pub fn len(&self) -> usize {
        self.capacity * BLOCK_BYTES
    }

    /// Whether no block was made yet.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Copy the template into the next free block; its index.
    fn add(&mut self) -> Result<u32, Error> {
        if self.used == self.capacity {
            return Err(Error::Config(format!(
                "more than {} distinct pairs: raise --max-blocks",
                self.capacity
            )));
        }
        // SAFETY: the block is inside the mapping and not yet executed.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.template.as_ptr(),
                self.base.add(self.used * BLOCK_BYTES),
                BLOCK_BYTES,
            );
        }
        self.used += 1;
        Ok((self.used - 1) as u32)
    }

    #[inline]
    fn run(&self, index: u32) {
        // SAFETY: the block at `index` was filled with the template, whose
        // code follows the C ABI (clobbers only ecx and flags) and returns.
        unsafe {
            let f: extern "C" fn() =
                std::mem::transmute(self.base.add(index as usize * BLOCK_BYTES));
            f();
        }
    }
}

impl Drop for CodeRegion {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe {
            libc::munmap(self.base.cast(), self.len());
        }
    }
}

// SAFETY: the region is only used by the thread that owns the value.
unsafe impl Send for CodeRegion {}

/// Most distinct values kept of one `switch` (see [`consume`]).
pub const MAX_VALUES: usize = 1024;

/// A pair as the control program tells pairs apart: (previous site, this
/// site, the value of the `switch` the previous site's block dispatched on,
/// if it had one).
pub type PairKey = (u64, u64, Option<u64>);

/// Sites before a pair that exact mode keeps: how far back conversion
/// can see which way the writer came. Two tell a loop's first test from
/// its back edge where the loop's body has two instrumented blocks (its
/// test's block and the reload before it).
pub const CHAIN_BEFORE: usize = 2;

/// A pair with the sites before it: (sites before, nearest first; the
/// pair's previous site; its site; for a pair that returns, the site of
/// the block that called the function it returns from, by the control
/// program's call stack). 0 where the run had none.
pub type Chain = ([u64; CHAIN_BEFORE], u64, u64, u64);

/// The writer's functions and the sites a call of each reaches first (file
/// addresses), which the control program keeps a call stack by while it
/// counts chains: a pair that returns from a function called from several
/// places says nothing of which call it returns to, and the sites just
/// before it reach back to that call only when the callee ran one or two
/// blocks. The stack knows for any depth.
#[derive(Debug, Default)]
pub struct Functions {
    /// Entry addresses, in order.
    entries: Vec<u64>,
    /// [`crate::disasm::Code::entry_sites`].
    entry_sites: rustc_hash::FxHashSet<u64>,
    /// File address of the runtime's marker symbol: with its run-time
    /// address (in the buffer's header) it gives the load bias.
    marker: u64,
}

impl Functions {
    /// Those of the writer whose code is `code`, whose marker symbol is at
    /// `marker`.
    pub fn new(code: &crate::disasm::Code, marker: u64) -> Functions {
        Functions {
            entries: code.functions.iter().map(|f| f.entry).collect(),
            entry_sites: code.entry_sites(),
            marker,
        }
    }

    /// Where the site at file address `site` is ([`Site`]).
    fn of(&self, site: u64) -> Site {
        // The site is the return address of a coverage call: the call's
        // last byte is in the function even when the call ends it.
        let i = self.entries.partition_point(|&e| e < site);
        match i.checked_sub(1) {
            Some(f) if site != 0 => Site {
                func: f as u32,
                entry: self.entry_sites.contains(&site),
                span: (
                    self.entries[f],
                    self.entries.get(i).copied().unwrap_or(u64::MAX),
                ),
            },
            _ => Site {
                func: NO_FUNCTION,
                entry: false,
                span: (0, 0),
            },
        }
    }
}

/// A site's place among the writer's functions.
#[derive(Clone, Copy, Debug)]
struct Site {
    /// Index of its function; [`NO_FUNCTION`] outside every function.
    func: u32,
    /// Whether a call of the function reaches it first.
    entry: bool,
    /// The sites in the same function: above `span.0`, up to `span.1`
    /// (file addresses).
    span: (u64, u64),
}

/// Slots of [`CallStack::known`] (the top 10 bits of a site's hash).
const KNOWN: usize = 1 << 10;

/// [`Functions::of`] of a site outside every function.
const NO_FUNCTION: u32 = u32::MAX;

/// Most frames the call stack keeps: a program that leaves functions
/// other than by returning (`longjmp`, a scheduler of its own) would grow
/// it without end; past this the older half is forgotten.
const MAX_FRAMES: usize = 1 << 16;

/// The control program's call stack: the writer's calls and returns as its
/// pairs show them (a pair into another function's entry site is a call,
/// into any other site of another function a return to the innermost
/// frame called from there), each frame the site of the calling block.
/// Pairs within one function leave it alone, so a function's calls of
/// itself are not frames: its returns to itself are not told apart, and
/// its return to its caller still finds the caller's frame.
struct CallStack<'a> {
    functions: &'a Functions,
    /// Run-time minus file addresses (set once the writer has attached).
    bias: u64,
    /// [`Functions::of`] by run-time site address, for the pairs that
    /// leave their function (a few thousand sites, millions of pairs): a
    /// direct-mapped cache, which costs a tenth of a hash map's probe.
    known: Box<[(u64, Site); KNOWN]>,
    /// [`Site::span`] of the current function: most pairs stay in it,
    /// which two comparisons tell.
    span: (u64, u64),
    /// (calling site, its function), innermost last.
    frames: Vec<(u64, u32)>,
    /// Function of the last pair's site.
    current: u32,
}

impl<'a> CallStack<'a> {
    fn new(functions: &'a Functions) -> CallStack<'a> {
        CallStack {
            functions,
            bias: 0,
            known: Box::new(
                [(
                    0,
                    Site {
                        func: NO_FUNCTION,
                        entry: false,
                        span: (0, 0),
                    },
                ); KNOWN],
            ),
            span: (0, 0),
            frames: Vec::new(),
            current: NO_FUNCTION,
        }
    }

    /// Follow pair (`from`, `to`) (run-time addresses); the calling site
    /// of the frame it returns to, 0 if it does not return.
    #[inline(always)]
    fn step(&mut self, from: u64, to: u64) -> u64 {
        let site = to.wrapping_sub(self.bias);
        if site > self.span.0 && site <= self.span.1 {
            return 0;
        }
        self.leave(from, to, site)
    }

    /// [`CallStack::step`] of a pair that leaves the current function's
    /// span (file address `site` of `to`).
    #[inline(never)]
    fn leave(&mut self, from: u64, to: u64, site: u64) -> u64 {
        // Sites are never 0, so no empty slot matches.
        let slot = &mut self.known[(to.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize];
        if slot.0 != to {
            *slot = (to, self.functions.of(site));
        }
        let Site { func, entry, span } = slot.1;
        self.span = span;
        let was = std::mem::replace(&mut self.current, func);
        if func == was || func == NO_FUNCTION || was == NO_FUNCTION {
            return 0;
        }
        if entry {
            if self.frames.len() == MAX_FRAMES {
                self.frames.drain(..MAX_FRAMES / 2);
            }
            self.frames.push((from, was));
            return 0;
        }
        match self.frames.iter().rposition(|&(_, f)| f == func) {
            Some(i) => {
                let caller = self.frames[i].0;
                self.frames.truncate(i);
                caller
            }
            None => 0,
        }
    }
}

/// What the control program saw.
#[derive(Debug, Default)]
pub struct Consumed {
    /// Pairs read from the buffer.
    pub pairs: u64,
    /// Switch values read from the buffer.
    pub values: u64,
    /// Exact count per pair (exact mode, or blocks with `also_exact`).
    pub exact: FxHashMap<PairKey, u64>,
    /// Exact count per chain of [`CHAIN_BEFORE`] + 1 pairs: the sites
    /// before the pair (nearest first), the pair's two sites; addresses
    /// without comparison bits. What came before each pair, which
    /// conversion uses to tell apart copies of one writer branch in the
    /// analysed program. Counted with the pairs.
    pub chains: FxHashMap<Chain, u64>,
    /// Code-block information: the pair of block `i` is `blocks[i]`.
    pub blocks: Vec<PairKey>,
    /// Address of block 0 and bytes reserved for blocks.
    pub region: Option<(u64, u64)>,
}

/// Knobs of the reading loop.
#[derive(Clone, Copy, Debug)]
pub struct ControlOptions<'a> {
    /// How pairs are consumed.
    pub mode: Mode,
    /// Most distinct pairs (code blocks).
    pub max_blocks: usize,
    /// Sleep this long after every batch read (tests: a slow reader).
    pub throttle: Option<Duration>,
    /// Count [`Consumed::chains`] too (with exact counts only).
    pub chains: bool,
    /// The writer's functions, to name the calling block of each chain
    /// that returns (counting chains only).
    pub functions: Option<&'a Functions>,
}

/// Read pairs until `writer_gone` is set and the buffer is empty. Runs in
/// the control thread; `on_start` is called with the code region (if any)
/// before the first pair, so the sampler knows where blocks live.
pub fn consume(
    ring: &Ring,
    opts: &ControlOptions<'_>,
    writer_gone: &AtomicBool,
    on_start: impl FnOnce(Option<(u64, u64)>),
) -> Result<Consumed, Error> {
    let mut out = Consumed::default();
    let (mut region, spin_exact) = match opts.mode {
        Mode::Exact => (None, true),
        Mode::Blocks { spin, also_exact } => {
            (Some(CodeRegion::new(opts.max_blocks, spin)?), also_exact)
        }
    };
    out.region = region.as_ref().map(|r| (r.base(), r.len() as u64));
    on_start(out.region);
    let mut index: FxHashMap<PairKey, u32> = FxHashMap::default();
    let mut plain_index: FxHashMap<(u64, u64), u32> = FxHashMap::default();
    // Pairs without a switch value: by their two sites alone (the exact
    // count is the reader's inner loop), or, counting chains, by the sites
    // before them too: one map for both counts (a pair's is the sum over
    // what came before), a wider key rather than a second look-up.
    let mut pairs_only: FxHashMap<(u64, u64), u64> = FxHashMap::default();
    let mut plain: FxHashMap<Chain, u64> = FxHashMap::default();
    let mut valued_chains: FxHashMap<Chain, u64> = FxHashMap::default();
    let mut before = [0u64; CHAIN_BEFORE];
    let mut calls = opts.functions.filter(|_| opts.chains).map(CallStack::new);
    let mut r = 0u64;
    // A switch value waiting for the pair that leaves its block, and the
    // values seen of each switch.
    let mut value: Option<u64> = None;
    let mut values: FxHashMap<u64, rustc_hash::FxHashSet<u64>> = FxHashMap::default();
    let mut idle = 0u32;
    // Read in batches of a quarter of the buffer: a reader that follows
    // right behind the writer makes every cache line of slots, and the
    // write index, travel between the two CPUs while both use it (on the
    // KVM guest this was measured on, 13 M pairs/s instead of 60 M).
    let batch = (ring.capacity() / 4).max(1);
    loop {
        let w = ring.write_index();
        if w - r < batch {
            // The writer process has exited (its stores are visible after
            // the wait that set the flag), so a look after that is final.
            if writer_gone.load(Ordering::Acquire) {
                let w = ring.write_index();
                if w == r {
                    break;
                }
            } else {
                idle += 1;
                if idle < 64 {
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
                } else {
                    std::thread::yield_now();
                }
                continue;
            }
        }
        let w = ring.write_index();
        idle = 0;
        if let Some(c) = calls.as_mut().filter(|_| r == 0) {
            // The runtime stores its marker's address before it attaches,
            // so it is there once pairs are.
            c.bias = ring
                .writer_report()
                .load_ref
                .wrapping_sub(c.functions.marker);
        }
        while r < w {
            let (from, to) = ring.slot(r);
            r += 1;
            if from & crate::ring::VALUE_TAG != 0 {
                out.values += 1;
                // A switch over a wide range (a hash, a pointer) would make
                // a pair per value; past MAX_VALUES values of one switch,
                // its pairs go without (and convert as if not traced).
                let seen = values.entry(from).or_default();
                value = if seen.len() < MAX_VALUES || seen.contains(&to) {
                    seen.insert(to);
                    Some(to)
                } else {
                    None
                };
                continue;
            }
            // Pairs without a value: all of them in a writer built without
            // trace-cmp.
            let v = value.take();
            if spin_exact && !opts.chains {
                match v {
                    None => *pairs_only.entry((from, to)).or_insert(0) += 1,
                    Some(_) => *out.exact.entry((from, to, v)).or_insert(0) += 1,
                }
            } else if spin_exact {
                let caller = calls
                    .as_mut()
                    .map_or(0, |c| c.step(from & crate::ring::ADDR_MASK, to));
                match v {
                    None => *plain.entry((before, from, to, caller)).or_insert(0) += 1,
                    Some(_) => {
                        *out.exact.entry((from, to, v)).or_insert(0) += 1;
                        *valued_chains
                            .entry((before, from & crate::ring::ADDR_MASK, to, caller))
                            .or_insert(0) += 1;
                    }
                }
            }
            if opts.chains {
                before.copy_within(0..CHAIN_BEFORE - 1, 1);
                before[0] = from & crate::ring::ADDR_MASK;
            }
            if let Some(region) = region.as_mut() {
                let found = match v {
                    None => plain_index.get(&(from, to)),
                    Some(_) => index.get(&(from, to, v)),
                };
                let block = match found {
                    Some(&b) => b,
                    None => {
                        let b = region.add()?;
                        match v {
                            None => plain_index.insert((from, to), b),
                            Some(_) => index.insert((from, to, v), b),
                        };
                        out.blocks.push((from, to, v));
                        b
                    }
                };
                region.run(block);
            }
            if r & 255 == 0 {
                ring.set_read_index(r);
            }
        }
        ring.set_read_index(r);
        if let Some(t) = opts.throttle {
            std::thread::sleep(t);
        }
    }
    out.exact
        .extend(pairs_only.into_iter().map(|((f, t), n)| ((f, t, None), n)));
    out.chains = valued_chains;
    for ((b, f, t, c), n) in plain {
        *out.exact.entry((f, t, None)).or_insert(0) += n;
        *out.chains
            .entry((b, f & crate::ring::ADDR_MASK, t, c))
            .or_insert(0) += n;
    }
    out.pairs = r - out.values;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `main` at 0x1000, `f` at 0x2000, `g` at 0x3000; each one's entry
    /// site at +5.
    fn functions() -> Functions {
        Functions {
            entries: vec![0x1000, 0x2000, 0x3000],
            entry_sites: [0x1005, 0x2005, 0x3005].into_iter().collect(),
            marker: 0,
        }
    }

    #[test]
    fn returns_name_the_block_that_called_at_any_depth() {
        let fs = functions();
        let mut c = CallStack::new(&fs);
        let mut run = |pairs: &[(u64, u64)]| -> Vec<u64> {
            pairs.iter().map(|&(f, t)| c.step(f, t)).collect()
        };
        // main calls f from its block 0x1010 and again from 0x1030; f
        // calls g, which runs three blocks, and each f returns to where it
        // was called from.
        let seen = run(&[
            (0, 0x1005),
            (0x1005, 0x1010),
            (0x1010, 0x2005),
            (0x2005, 0x3005),
            (0x3005, 0x3010),
            (0x3010, 0x3020),
            (0x3020, 0x2010),
            (0x2010, 0x1020),
            (0x1020, 0x1030),
            (0x1030, 0x2005),
            (0x2005, 0x1040),
        ]);
        assert_eq!(seen, [0, 0, 0, 0, 0, 0, 0x2005, 0x1010, 0, 0, 0x1030]);
    }

    #[test]
    fn mutual_recursion_returns_to_the_innermost_caller() {
        let fs = functions();
        let mut c = CallStack::new(&fs);
        let seen: Vec<u64> = [
            (0, 0x1005),
            (0x1005, 0x2005), // main → f
            (0x2005, 0x3005), // f → g
            (0x3005, 0x2005), // g → f (a call: f's entry site)
            (0x2005, 0x3040), // f returns into g
            (0x3040, 0x2030), // g returns into f
            (0x2030, 0x1050), // f returns into main
        ]
        .iter()
        .map(|&(f, t)| c.step(f, t))
        .collect();
        assert_eq!(seen, [0, 0, 0, 0, 0x3005, 0x2005, 0x1005]);
    }

    #[test]
    fn a_return_the_stack_does_not_know_names_no_caller() {
        let fs = functions();
        let mut c = CallStack::new(&fs);
        // Into f's middle without a call of f (a longjmp, a missed call):
        // nothing to name, and the stack is left as it was.
        assert_eq!(c.step(0, 0x1005), 0);
        assert_eq!(c.step(0x1005, 0x2040), 0);
        assert_eq!(c.step(0x2040, 0x1060), 0);
        assert!(c.frames.is_empty());
    }
}
