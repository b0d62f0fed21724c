//! The branches of the *analysed* program: a recording converted into the
//! machine branches of the writer ([`crate::convert`]) mapped onto the
//! user's ordinary build — the same sources and options without coverage —
//! so that `perfscript`, `bolt` and the branch tables speak of the binary
//! that is really optimised and shipped.
//!
//! The two binaries differ: the coverage calls clobber registers, so the
//! compiler allocates and schedules differently, lays blocks out in
//! another order, inverts conditions, and if-converts in one build what it
//! branches over in the other. What they share is the source, and both
//! binaries' DWARF says where each instruction came from. The
//! correspondence is built from that:
//!
//! 1. every instruction of both binaries gets a *source key*: the chain of
//!    inlined frames (function, call line and column), file, line, column
//!    and discriminator of its line-table row ([`SourceKeys`]); keys are
//!    also kept with the column and the discriminator left out, for code
//!    whose columns moved;
//! 2. each branch of the writer is matched with the branch of the same kind
//!    and key in the analysed binary (preferring the same function symbol,
//!    then the callee for calls); where several share the key, the one
//!    whose surrounding code has the most keys in common wins, and the
//!    match is counted as *ambiguous*;
//! 3. the *sense* of a conditional branch — whether the analysed build
//!    jumps where the writer falls through — is read from the code each
//!    side leads to: the keys of the straight-line code after the taken
//!    target and after the fall-through (coverage calls skipped, direct
//!    jumps followed) are compared crosswise;
//! 4. conditional outcomes, indirect targets and returns come from the
//!    writer through the match; everything that depends only on layout
//!    (unconditional jumps, direct calls, straight-line ranges) is
//!    recomputed from the analysed binary's own code by propagating
//!    execution counts forward through it, starting each function with
//!    its entry count in the writer; copies of one source branch that
//!    their surroundings did not tell apart are then paired again so that
//!    each analysed copy runs as often as its writer copy, and a writer
//!    branch the analysed build has more copies of is split among them by
//!    the way into each, which an exact recording's chains of pairs say.
//!
//! What does not map is counted, not guessed: [`MappingStats`] gives the
//! writer's branch executions mapped uniquely, ambiguously and not at all,
//! and [`Analysed::unmapped`] the sites that did not map with the reason.

use crate::convert::{self, BoltProfile, Branch, BranchSite, Converted};
use crate::disasm::{Code, Flow};
use crate::recording::Recording;
use crate::Error;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// No line-table row covers the instruction.
const NO_KEY: u32 = u32::MAX;

/// How closely two source keys must agree: all of the key, the key without
/// columns, the key without columns and discriminators.
const LEVELS: usize = 3;

/// One source key, before interning: inline frames innermost first as
/// (function, line, column) — the innermost frame's line is the
/// instruction's own, the others' are call sites — the innermost file's
/// name and the row's discriminator.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Key {
    frames: Vec<(String, u32, u32)>,
    file: String,
    discriminator: u32,
}

/// Source keys shared by both binaries: equal keys get equal numbers.
#[derive(Default)]
pub struct Interner(FxHashMap<Key, u32>);

impl Interner {
    fn id(&mut self, key: Key) -> u32 {
        let n = self.0.len() as u32;
        *self.0.entry(key).or_insert(n)
    }
}

/// Every instruction's source keys, at each level of agreement (all of
/// the key, without columns, without discriminators), by instruction index.
pub struct SourceKeys {
    keys: Vec<[u32; LEVELS]>,
}

impl SourceKeys {
    /// Read `binary`'s DWARF (`bytes`) for each instruction of `code`.
    /// A binary without line tables is an error that says to build with -g.
    pub fn read(
        binary: &Path,
        bytes: &[u8],
        code: &Code,
        interner: &mut Interner,
    ) -> Result<SourceKeys, Error> {
        use object::{Object, ObjectSection};
        let bad = |what: String| Error::BadInput(format!("{}: {what}", binary.display()));
        let file = object::File::parse(bytes).map_err(|_| bad("not an ELF file".into()))?;
        if file.section_by_name(".debug_info").is_none()
            || file.section_by_name(".debug_line").is_none()
        {
            return Err(bad(
                "no debugging information (.debug_info/.debug_line); build it with -g".into(),
            ));
        }
        let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
            Ok(file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or(Cow::Borrowed(&[])))
        };
        let dwarf_err =
            |e: gimli::Error| bad(format!("its debugging information cannot be read ({e})"));
        let sections = gimli::DwarfSections::load(load).map_err(dwarf_err)?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
        let rows = discriminators(&dwarf).map_err(dwarf_err)?;
        let context = addr2line::Context::from_dwarf(dwarf).map_err(dwarf_err)?;
        let mut keys = Vec::with_capacity(code.insns.len());
        for insn in &code.insns {
            let mut frames = Vec::new();
            let mut file_name = String::new();
            if let Ok(mut it) = context.find_frames(insn.addr).skip_all_loads() {
                while let Ok(Some(frame)) = it.next() {
                    let name = frame
                        .function
                        .as_ref()
                        .and_then(|n| n.raw_name().ok())
                        .map(|n| n.into_owned())
                        .unwrap_or_default();
                    let (line, column) = frame
                        .location
                        .as_ref()
                        .map_or((0, 0), |l| (l.line.unwrap_or(0), l.column.unwrap_or(0)));
                    if frames.is_empty() {
                        file_name = frame
                            .location
                            .as_ref()
                            .and_then(|l| l.file)
                            .map(|f| f.rsplit('/').next().unwrap_or(f).to_string())
                            .unwrap_or_default();
                    }
                    frames.push((name, line, column));
                }
            }
            if frames.iter().all(|f| f.1 == 0) {
                keys.push([NO_KEY; LEVELS]);
                continue;
            }
            let discriminator = row_at(&rows, insn.addr);
            let full = Key {
                frames,
                file: file_name,
                discriminator,
            };
            let mut no_column = full.clone();
            for f in &mut no_column.frames {
                f.2 = 0;
            }
            let mut coarse = no_column.clone();
            coarse.discriminator = 0;
            keys.push([
                interner.id(full),
                interner.id(no_column),
                interner.id(coarse),
            ]);
        }
        Ok(SourceKeys { keys })
    }
}

/// Line-table rows as (address, sequence end, discriminator), sorted so
/// that at one address a sequence's end comes before the next one's rows.
fn discriminators<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
) -> gimli::Result<Vec<(u64, bool, u32)>> {
    let mut rows = Vec::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        let Some(program) = unit.line_program.clone() else {
            continue;
        };
        let mut it = program.rows();
        while let Some((_, row)) = it.next_row()? {
            rows.push((
                row.address(),
                !row.end_sequence(),
                row.discriminator() as u32,
            ));
        }
    }
    // Stable: among rows at one address the last one written applies.
    rows.sort_by_key(|r| (r.0, r.1));
    Ok(rows.into_iter().map(|(a, live, d)| (a, !live, d)).collect())
}

/// The discriminator of the row that covers `addr`.
fn row_at(rows: &[(u64, bool, u32)], addr: u64) -> u32 {
    let i = rows.partition_point(|r| r.0 <= addr);
    match i.checked_sub(1).map(|i| rows[i]) {
        Some((_, false, d)) => d,
        _ => 0,
    }
}

/// A binary with its code and source keys.
pub struct Side<'a> {
    /// Its instructions.
    pub code: &'a Code,
    /// Their source keys.
    pub keys: &'a SourceKeys,
}

/// The kinds of branch matched between the binaries: the conversion's.
use crate::convert::BranchKind as Kind;

impl Side<'_> {
    fn key(&self, i: usize, level: usize) -> u32 {
        self.keys.keys[i][level]
    }

    fn is_coverage_call(&self, i: usize) -> bool {
        matches!(self.code.insns[i].flow, Flow::Call(t) | Flow::Jump(t) if Some(t) == self.code.callback)
    }

    /// The keys of the code that runs from instruction `i` on: straight
    /// through, following direct jumps in the function, passing over calls
    /// and skipping coverage calls, up to the next conditional or indirect
    /// branch or return (whose key is included) — at most a few keys.
    fn signature(&self, mut i: usize) -> Vec<u32> {
        let code = self.code;
        let func = code.insns[i].func;
        let mut out: Vec<u32> = Vec::new();
        for _ in 0..48 {
            let insn = code.insns[i];
            if insn.func != func {
                break;
            }
            let coverage = self.is_coverage_call(i);
            let k = self.key(i, 0);
            if !coverage && k != NO_KEY && !out.contains(&k) {
                out.push(k);
                if out.len() >= 8 {
                    break;
                }
            }
            let next = match insn.flow {
                Flow::Next | Flow::Call(_) | Flow::CallIndirect => insn.next,
                Flow::Jump(t) if !coverage => t,
                _ => break,
            };
            match code.at.get(&next) {
                Some(&n) if next != insn.addr => i = n,
                _ => break,
            }
        }
        out
    }
}

impl Side<'_> {
    /// The keys of the code that falls into instruction `i`: the
    /// instructions before it in address order, back to one that does not
    /// fall through (a jump, a return), coverage calls skipped — what tells
    /// apart copies of one source branch the compiler duplicated onto
    /// different paths.
    fn lead_in(&self, i: usize) -> Vec<u32> {
        let code = self.code;
        let func = code.insns[i].func;
        let mut out: Vec<u32> = Vec::new();
        for j in (i.saturating_sub(48)..i).rev() {
            let insn = code.insns[j];
            if insn.func != func
                || matches!(
                    insn.flow,
                    Flow::Jump(_) | Flow::JumpIndirect | Flow::Ret | Flow::Stop
                ) && !self.is_coverage_call(j)
            {
                break;
            }
            let k = self.key(j, 0);
            if !self.is_coverage_call(j) && k != NO_KEY && !out.contains(&k) {
                out.push(k);
                if out.len() >= 8 {
                    break;
                }
            }
        }
        out
    }
}

/// Keys two signatures share, the earlier ones weighing more.
fn similarity(a: &[u32], b: &[u32]) -> f64 {
    a.iter()
        .enumerate()
        .filter_map(|(i, k)| {
            b.iter()
                .position(|x| x == k)
                .map(|j| 1.0 / (1.0 + i.min(j) as f64))
        })
        .sum()
}

/// How a writer branch found its counterpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    /// One branch of the analysed binary has its kind and source key.
    Unique,
    /// Several had; the one with the most similar surroundings was taken
    /// (or the sense of a conditional branch could not be told).
    Ambiguous,
    /// None.
    Unmapped(Why),
}

/// Why a writer branch has no counterpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// The writer's line tables say nothing about the branch.
    NoLine,
    /// The analysed build computes it without a branch (a conditional move
    /// or set at the same source key: if-converted).
    IfConverted,
    /// The analysed build has no branch of this kind at that source key
    /// (for jumps: its layout made it a fall-through).
    NoCounterpart,
    /// A target has no counterpart (a return to a call that did not map,
    /// an indirect target outside the analysed jump's table).
    Target,
}

/// The counterpart of one writer branch.
#[derive(Clone, Debug)]
struct Counterpart {
    /// Instruction index in the analysed binary.
    at: usize,
    /// A conditional branch whose taken and fall-through sides swap.
    inverted: bool,
    how: Match,
    /// The analysed branches that share the key (`at` among them), when
    /// the analysed build has more copies of the source branch than the
    /// writer, with whether each is inverted: the writer's counts cannot
    /// be split among them by identity.
    copies: Option<Vec<(usize, bool)>>,
    /// The analysed branches that shared the key, when there are as many
    /// as the writer has copies (2 to 4): the copies are paired again by
    /// their propagated counts.
    group: Option<Vec<usize>>,
}

/// Branch executions of the writer by how they mapped.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Tally {
    /// Mapped to the one branch with the same kind and source key.
    pub unique: u64,
    /// Mapped to one of several candidates.
    pub ambiguous: u64,
    /// Not mapped.
    pub unmapped: u64,
}

impl Tally {
    fn add(&mut self, how: Match, n: u64) {
        match how {
            Match::Unique => self.unique += n,
            Match::Ambiguous => self.ambiguous += n,
            Match::Unmapped(_) => self.unmapped += n,
        }
    }
    /// All executions.
    pub fn total(&self) -> u64 {
        self.unique + self.ambiguous + self.unmapped
    }
}

/// How much of the writer's converted branches reached the analysed binary.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MappingStats {
    /// Branch executions of every kind (conditional executions counted
    /// taken or not).
    pub all: Tally,
    /// Per kind.
    pub by_kind: Vec<(Kind, Tally)>,
    /// Of the unmapped conditional executions, those the analysed build
    /// if-converted (no branch there to profile).
    pub if_converted: u64,
    /// Conditional branches of the analysed binary that the propagated
    /// counts reach but no writer branch maps to: their executions (the
    /// count falls through them).
    pub analysed_conditionals_without_counterpart: u64,
    /// Functions of the analysed binary whose entry count was taken from
    /// the writer (its entry block's coverage call).
    pub entries_from_writer: u64,
    /// Functions whose entry count came from calls in the analysed binary.
    pub entries_from_calls: u64,
}

/// A writer branch that did not map.
#[derive(Clone, Debug, Serialize)]
pub struct UnmappedSite {
    /// Writer address.
    pub addr: String,
    /// `function+offset` in the writer.
    pub at: String,
    /// Its source line (innermost frame).
    pub line: String,
    /// Kind.
    pub kind: Kind,
    /// Executions lost.
    pub executions: u64,
    /// Why.
    pub why: Why,
}

/// The recording's branches in the analysed binary.
pub struct Analysed<'a> {
    /// The analysed binary's code.
    pub code: &'a Code,
    /// Executions of each instruction (by index), propagated.
    pub exec: Vec<u64>,
    /// Taken branches: source → target → count.
    pub taken: FxHashMap<u64, FxHashMap<u64, u64>>,
    /// Conditional branches not taken: source → count.
    pub not_taken: FxHashMap<u64, u64>,
    /// How much mapped.
    pub stats: MappingStats,
    /// Writer branches that did not map, most executed first.
    pub unmapped: Vec<UnmappedSite>,
    /// Straight-line pieces of the execution.
    pieces: Vec<Piece>,
}

/// One straight-line piece of the analysed binary's execution: from
/// `start` (where a branch entered, or a callee returned) through `end`
/// (a branch that left, to `to`, or [`UNKNOWN`]), `count` times.
#[derive(Clone, Copy, Debug)]
struct Piece {
    start: u64,
    end: u64,
    to: u64,
    count: u64,
}

/// Candidates in the analysed binary by (kind, level, key).
type Index = FxHashMap<(Kind, usize, u32), Vec<usize>>;

struct Matcher<'a> {
    w: Side<'a>,
    a: Side<'a>,
    /// Branches of the analysed binary by (kind, level, key).
    index: Index,
    /// The same for the writer, to rank copies of one source branch.
    w_index: Index,
    /// A-binary function index by symbol name.
    a_func: FxHashMap<&'a str, u32>,
    /// Source keys of the analysed binary's conditional moves and sets.
    a_selects: FxHashSet<u32>,
}

impl<'a> Matcher<'a> {
    fn new(w: Side<'a>, a: Side<'a>) -> Matcher<'a> {
        let index_of = |side: &Side<'_>| {
            let mut index: Index = FxHashMap::default();
            for (i, insn) in side.code.insns.iter().enumerate() {
                if let Some(kind) = Kind::of(insn.flow).filter(|_| !side.is_coverage_call(i)) {
                    for level in 0..LEVELS {
                        let k = side.key(i, level);
                        if k != NO_KEY {
                            index.entry((kind, level, k)).or_default().push(i);
                        }
                    }
                }
            }
            index
        };
        let (index, w_index) = (index_of(&a), index_of(&w));
        let a_selects = a
            .code
            .insns
            .iter()
            .enumerate()
            .filter(|(_, insn)| a.code.selects.contains(&insn.addr))
            .map(|(i, _)| a.key(i, 2))
            .collect();
        let a_func = a
            .code
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i as u32))
            .collect();
        Matcher {
            w,
            a,
            index,
            w_index,
            a_func,
            a_selects,
        }
    }

    fn w_name(&self, i: usize) -> &str {
        &self.w.code.functions[self.w.code.insns[i].func as usize].name
    }

    fn a_name(&self, i: usize) -> &str {
        &self.a.code.functions[self.a.code.insns[i].func as usize].name
    }

    /// The analysed function that has the writer function's name.
    fn a_function(&self, w_addr: u64) -> Option<u32> {
        let f = self.w.code.function_of(w_addr)?;
        self.a_func.get(f.name.as_str()).copied()
    }

    /// The analysed instruction at the start of the function named like
    /// the writer's function entered at `w_entry`.
    fn a_entry(&self, w_entry: u64) -> Option<u64> {
        let f = self.a_function(w_entry)?;
        let w = self.w.code.function_of(w_entry)?;
        (w.entry == w_entry).then(|| self.a.code.functions[f as usize].entry)
    }

    /// Callee name of a direct call.
    fn callee<'s>(side: &'s Side<'_>, i: usize) -> Option<&'s str> {
        match side.code.insns[i].flow {
            Flow::Call(t) => side.code.function_of(t).map(|f| f.name.as_str()),
            _ => None,
        }
    }

    /// The counterpart of writer instruction `w`.
    fn counterpart(&self, w: usize) -> Result<Counterpart, Why> {
        let insn = self.w.code.insns[w];
        let kind = Kind::of(insn.flow).ok_or(Why::NoCounterpart)?;
        if self.w.key(w, 0) == NO_KEY {
            return match kind {
                Kind::IndirectJump => self
                    .unkeyed_dispatch(w)
                    .map(|at| Counterpart {
                        at,
                        inverted: false,
                        how: Match::Ambiguous,
                        copies: None,
                        group: None,
                    })
                    .ok_or(Why::NoLine),
                _ => Err(Why::NoLine),
            };
        }
        let mut cands: Vec<usize> = Vec::new();
        let mut rank: Box<dyn Fn(usize) -> f64> = Box::new(|_| 0.0);
        let mut w_copies = 1;
        let mut w_same: &[usize] = &[];
        // How many branches of the function share the key at `level`, in
        // the writer and in the analysed build.
        let counts = |level: usize| {
            let key = (kind, level, self.w.key(w, level));
            let name = self.w_name(w);
            let c = self.index.get(&key)?;
            let a = c.iter().filter(|&&x| self.a_name(x) == name).count();
            let w = self.w_index[&key]
                .iter()
                .filter(|&&x| self.w_name(x) == name)
                .count();
            Some((w, a))
        };
        // The first level with candidates, unless the analysed build has
        // fewer of them than the writer has branches with that key and a
        // coarser level has as many on both sides: gcc numbers the blocks
        // of one line (discriminators), and the coverage calls split the
        // writer's blocks differently, so two tests of one line can share
        // a discriminator in one build and not in the other.
        let first = (0..LEVELS).find(|&l| counts(l).is_some_and(|(_, a)| a > 0));
        let chosen = first.and_then(|f| match counts(f) {
            Some((wn, an)) if kind == Kind::Conditional && an < wn => {
                (f + 1..LEVELS).find(|&l| counts(l).is_some_and(|(w2, a2)| w2 == a2 && a2 > an))
            }
            _ => None,
        });
        for level in chosen.into_iter().chain(0..LEVELS) {
            let key = (kind, level, self.w.key(w, level));
            if let Some(c) = self.index.get(&key) {
                cands = c.clone();
                w_same = &self.w_index[&key];
                let name = self.w_name(w);
                w_copies = self.w_index[&key]
                    .iter()
                    .filter(|&&x| self.w_name(x) == name)
                    .count();
                // Copies of one source branch (unrolled, duplicated) pair
                // up in address order when nothing else tells them apart.
                let w_rank = self.w_index[&key].iter().position(|&x| x == w).unwrap_or(0);
                let all = c.clone();
                rank = Box::new(move |a| {
                    let a_rank = all.iter().position(|&x| x == a).unwrap_or(0);
                    (a_rank as f64 - w_rank as f64).abs()
                });
                break;
            }
        }
        let lost = || {
            if kind == Kind::Conditional && self.a_selects.contains(&self.w.key(w, 2)) {
                Why::IfConverted
            } else {
                Why::NoCounterpart
            }
        };
        if cands.is_empty() {
            return Err(lost());
        }
        // The same function symbol (a clone such as foo.constprop.0 holds
        // the same source keys as foo), then for calls the same callee.
        let narrow = |cands: &mut Vec<usize>, keep: &dyn Fn(usize) -> bool| {
            if cands.iter().any(|&c| keep(c)) {
                cands.retain(|&c| keep(c));
            }
        };
        let name = self.w_name(w);
        narrow(&mut cands, &|c| self.a_name(c) == name);
        // The tests of one `switch` (its range checks, its tests of single
        // values) share a source line; what tells them apart is the
        // constant each compares with. A constant that both builds' tests
        // of the line compare with pairs those tests with each other only;
        // a test whose constant the analysed build's tests of the line
        // lack was compiled without a branch there (if-converted), and
        // mapping it onto another test would add its executions to a
        // branch that did not run them.
        if kind == Kind::Conditional {
            let constant = |side: &Side<'_>, i: usize| {
                side.code.compared.get(&side.code.insns[i].addr).copied()
            };
            let w_copies_all: Vec<usize> = w_same
                .iter()
                .copied()
                .filter(|&o| self.w_name(o) == name)
                .collect();
            let a_constants: FxHashSet<i64> =
                cands.iter().filter_map(|&c| constant(&self.a, c)).collect();
            let w_constants: FxHashSet<i64> = w_copies_all
                .iter()
                .filter_map(|&o| constant(&self.w, o))
                .collect();
            let shared =
                |k: Option<i64>| k.filter(|k| a_constants.contains(k) && w_constants.contains(k));
            // The width of what each test compares (an `int` against a
            // pointer) tells apart tests of one line that have no
            // constant, when both builds' tests of the line have the same
            // widths (a compiler that tests a `bool` in a byte in one build
            // and in a word in the other changes them: then it says
            // nothing).
            let width = |side: &Side<'_>, i: usize| {
                side.code
                    .compared_width
                    .get(&side.code.insns[i].addr)
                    .copied()
            };
            let widths = |side: &Side<'_>, of: &[usize]| {
                let mut v: Vec<Option<u8>> = of.iter().map(|&i| width(side, i)).collect();
                v.sort_unstable();
                v
            };
            let by_width = widths(&self.w, &w_copies_all) == widths(&self.a, &cands);
            let same = |side: &Side<'_>, i: usize, mine: (Option<i64>, Option<u8>)| {
                shared(constant(side, i)) == mine.0 && (!by_width || width(side, i) == mine.1)
            };
            let mine = (shared(constant(&self.w, w)), width(&self.w, w));
            let before = cands.len();
            cands.retain(|&c| same(&self.a, c, mine));
            if cands.is_empty() {
                return Err(lost());
            }
            if cands.len() < before {
                w_copies = w_copies_all
                    .iter()
                    .filter(|&&o| same(&self.w, o, mine))
                    .count();
            }
        }
        if kind == Kind::Call {
            let callee = Self::callee(&self.w, w);
            narrow(&mut cands, &|c| Self::callee(&self.a, c) == callee);
        }
        let mut how = if cands.len() == 1 {
            Match::Unique
        } else {
            Match::Ambiguous
        };
        let here = self.w.signature(w);
        let (mut best, mut best_score, mut inverted) = (cands[0], f64::MIN, false);
        for &c in &cands {
            let (score, inv) = if kind == Kind::Conditional {
                let (same, inv) = self.sense(w, c);
                (same.max(inv), inv > same)
            } else {
                (similarity(&here, &self.a.signature(c)), false)
            };
            let lead = similarity(&self.w.lead_in(w), &self.a.lead_in(c));
            let score = score + lead - 0.5 * rank(c);
            if score > best_score {
                (best, best_score, inverted) = (c, score, inv);
            }
        }
        if kind == Kind::Conditional {
            let (same, inv) = self.sense(w, best);
            if same == inv {
                how = Match::Ambiguous;
            }
        }
        let copies = (kind == Kind::Conditional && cands.len() > w_copies).then(|| {
            cands
                .iter()
                .map(|&c| {
                    let (same, inv) = self.sense(w, c);
                    (c, inv > same)
                })
                .collect()
        });
        let group = (kind == Kind::Conditional
            && how == Match::Ambiguous
            && (2..=4).contains(&cands.len())
            && cands.len() == w_copies)
            .then(|| cands.clone());
        Ok(Counterpart {
            at: best,
            inverted,
            how,
            copies,
            group,
        })
    }

    /// The counterpart of the writer's indirect jump `w` when it has no
    /// source line (clang gives a `switch`'s dispatch line 0): the jump
    /// through a jump table at the same place, in address order, among the
    /// table jumps of the analysed function of the same name — when both
    /// functions have as many. Its targets then map by the code they lead
    /// to, as any jump table's do.
    fn unkeyed_dispatch(&self, w: usize) -> Option<usize> {
        let insn = self.w.code.insns[w];
        let func = self.a_function(insn.addr)?;
        let dispatches = |code: &Code, func: u32| -> Vec<usize> {
            code.insns
                .iter()
                .enumerate()
                .filter(|(_, i)| {
                    i.func == func
                        && i.flow == Flow::JumpIndirect
                        && code.tables.contains_key(&i.addr)
                })
                .map(|(k, _)| k)
                .collect()
        };
        let (ws, ays) = (
            dispatches(self.w.code, insn.func),
            dispatches(self.a.code, func),
        );
        let nth = ws.iter().position(|&x| x == w)?;
        (ws.len() == ays.len()).then(|| ays[nth])
    }

    /// How alike the writer conditional `w`'s successors are to those of
    /// the analysed conditional `a`: (same sense, inverted sense).
    fn sense(&self, w: usize, a: usize) -> (f64, f64) {
        let succ = |side: &Side<'_>, i: usize| {
            let insn = side.code.insns[i];
            let Flow::Cond(t) = insn.flow else {
                return (Vec::new(), Vec::new());
            };
            let sig = |addr: u64| {
                side.code
                    .at
                    .get(&addr)
                    .map(|&j| side.signature(j))
                    .unwrap_or_default()
            };
            (sig(t), sig(insn.next))
        };
        let (wt, wn) = succ(&self.w, w);
        let (at, an) = succ(&self.a, a);
        (
            similarity(&wt, &at) + similarity(&wn, &an),
            similarity(&wt, &an) + similarity(&wn, &at),
        )
    }

    /// The analysed target of a writer target `w_to` of branch `w` whose
    /// counterpart is `a`.
    fn target(&self, w: usize, a: usize, w_to: u64) -> Option<u64> {
        let a_insn = self.a.code.insns[a];
        match self.w.code.insns[w].flow {
            Flow::JumpIndirect => {
                let table = self.a.code.tables.get(&a_insn.addr)?;
                let here = self.w.signature(*self.w.code.at.get(&w_to)?);
                table
                    .iter()
                    .map(|&t| {
                        let s = self.a.code.at.get(&t).map(|&j| self.a.signature(j));
                        (similarity(&here, &s.unwrap_or_default()), t)
                    })
                    .filter(|(s, _)| *s > 0.0)
                    .max_by(|x, y| x.0.total_cmp(&y.0).then(y.1.cmp(&x.1)))
                    .map(|(_, t)| t)
            }
            Flow::CallIndirect => self.a_entry(w_to),
            Flow::Ret => {
                // The return site after the writer's call: after that
                // call's counterpart.
                let i = *self.w.code.at.get(&w_to)?;
                let call = i.checked_sub(1)?;
                let c = self.counterpart(call).ok()?;
                let site = self.a.code.insns[c.at].next;
                matches!(
                    self.a.code.insns[c.at].flow,
                    Flow::Call(_) | Flow::CallIndirect
                )
                .then_some(site)
            }
            _ => None,
        }
    }
}

/// What ran before each execution of a writer branch, to tell apart the
/// analysed program's copies of it (a loop the analysed build rotated, a
/// block it threaded onto one path): which copy an execution takes
/// depends on the way into it, which one pair does not say but the pairs
/// before it do. An exact recording counts each pair with the sites
/// before it ([`crate::recording::ChainCount`]); the source keys of the
/// writer's code along those pairs' paths up to the branch, each weighed
/// by how few of the distinct ways in share it, are compared with those of
/// the code that leads into each analysed copy, walked backwards through
/// the analysed function. Each way in goes to the copy it resembles most;
/// a way that resembles several equally goes to each.
struct Contexts<'c> {
    conv: &'c Converted<'c>,
    w: &'c Side<'c>,
    a: &'c Side<'c>,
    /// Converted pairs with a path, by (from, to).
    by_pair: FxHashMap<(u64, u64), Vec<usize>>,
    /// The sites before each pair (nearest first), with their counts.
    before: FxHashMap<(u64, u64), Vec<Before>>,
    /// Converted pairs whose path passes each writer conditional.
    passing: FxHashMap<u64, Vec<usize>>,
}

/// The sites before a pair (nearest first) and how often they came before it.
type Before = (Vec<u64>, u64);

/// Most source keys compared on each side.
const CONTEXT_KEYS: usize = 24;

impl<'c> Contexts<'c> {
    fn new(conv: &'c Converted<'c>, w: &'c Side<'c>, a: &'c Side<'c>) -> Contexts<'c> {
        let mut by_pair: FxHashMap<(u64, u64), Vec<usize>> = FxHashMap::default();
        let mut passing: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        for (k, p) in conv.pairs.iter().enumerate() {
            let Ok(path) = &p.path else { continue };
            by_pair.entry((p.from, p.to)).or_default().push(k);
            let mut seen: Vec<u64> = path
                .taken
                .iter()
                .map(|b| b.0)
                .chain(path.not_taken.iter().copied())
                .collect();
            seen.sort_unstable();
            seen.dedup();
            for s in seen {
                passing.entry(s).or_default().push(k);
            }
        }
        let mut before: FxHashMap<(u64, u64), Vec<Before>> = FxHashMap::default();
        for c in &conv.recording.chains {
            // Chains that differ only in their calling site (the call
            // stack's) are one way in here; the recording sorts them next
            // to each other.
            let ways = before.entry((c.from, c.to)).or_default();
            match ways.last_mut().filter(|w| w.0 == c.before) {
                Some(w) => w.1 += c.count,
                None => ways.push((c.before.clone(), c.count)),
            }
        }
        Contexts {
            conv,
            w,
            a,
            by_pair,
            before,
            passing,
        }
    }

    /// The writer instructions pair `k`'s path runs, in order, up to the
    /// first execution of instruction `stop` (all of them without one).
    fn walk(&self, k: usize, stop: Option<usize>) -> Vec<usize> {
        let code = self.w.code;
        let p = &self.conv.pairs[k];
        let mut out = Vec::new();
        let Ok(path) = &p.path else { return out };
        let Some(&start) = code.at.get(&p.from) else {
            return out;
        };
        let mut i = start;
        let mut taken = path.taken.iter().peekable();
        for _ in 0..4096 {
            out.push(i);
            let insn = code.insns[i];
            if Some(i) == stop || insn.addr == path.end_call {
                break;
            }
            let next = match taken.peek() {
                Some(&&(from, to)) if from == insn.addr => {
                    taken.next();
                    to
                }
                _ => match insn.flow {
                    Flow::Next | Flow::Cond(_) | Flow::Call(_) | Flow::CallIndirect => insn.next,
                    _ => break,
                },
            };
            match code.at.get(&next) {
                Some(&n) => i = n,
                None => break,
            }
        }
        out
    }

    /// Source keys of writer instructions, newest first, without coverage
    /// calls and repeats, appended to `out`.
    fn keys_back(&self, insns: &[usize], out: &mut Vec<u32>) {
        for &i in insns.iter().rev() {
            let k = self.w.key(i, 0);
            if k != NO_KEY && !self.w.is_coverage_call(i) && !out.contains(&k) {
                out.push(k);
                if out.len() >= CONTEXT_KEYS {
                    return;
                }
            }
        }
    }

    /// The keys of the analysed code that leads into instruction `at`,
    /// nearest first: a walk backwards through its function's control flow
    /// (fall-throughs, jumps, jump tables) that does not pass through the
    /// other copies `others`.
    fn lead(&self, at: usize, others: &[usize]) -> Vec<u32> {
        let code = self.a.code;
        let func = code.insns[at].func;
        let (mut lo, mut hi) = (at, at);
        while lo > 0 && code.insns[lo - 1].func == func {
            lo -= 1;
        }
        while hi + 1 < code.insns.len() && code.insns[hi + 1].func == func {
            hi += 1;
        }
        let mut preds: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
        for j in lo..=hi {
            let insn = code.insns[j];
            let mut to = |t: u64| {
                if let Some(&ti) = code.at.get(&t) {
                    if (lo..=hi).contains(&ti) {
                        preds.entry(ti).or_default().push(j);
                    }
                }
            };
            match insn.flow {
                Flow::Next | Flow::Call(_) | Flow::CallIndirect => to(insn.next),
                Flow::Cond(t) => {
                    to(insn.next);
                    to(t);
                }
                Flow::Jump(t) => to(t),
                Flow::JumpIndirect => {
                    for &t in code.tables.get(&insn.addr).into_iter().flatten() {
                        to(t);
                    }
                }
                _ => {}
            }
        }
        let mut out: Vec<u32> = Vec::new();
        let mut seen: FxHashSet<usize> = FxHashSet::default();
        let mut queue = std::collections::VecDeque::from([at]);
        seen.insert(at);
        while let Some(i) = queue.pop_front() {
            let k = self.a.key(i, 0);
            if k != NO_KEY && !out.contains(&k) {
                out.push(k);
                if out.len() >= CONTEXT_KEYS {
                    break;
                }
            }
            if seen.len() > 512 {
                continue;
            }
            for &p in preds.get(&i).into_iter().flatten() {
                if !others.contains(&p) && seen.insert(p) {
                    queue.push_back(p);
                }
            }
        }
        out
    }

    /// Split writer conditional `w`'s executions among the analysed copies
    /// `copies` (instruction, inverted) by what ran before each: per copy,
    /// (taken, not taken) in the analysed copy's sense, and whether these
    /// are its counts (no way in that resembled several copies equally
    /// went to it). `None` when the ways in do not tell the copies apart.
    fn split(&self, w: usize, copies: &[(usize, bool)]) -> Option<Vec<(u64, u64, bool)>> {
        let w_addr = self.w.code.insns[w].addr;
        let ats: Vec<usize> = copies.iter().map(|c| c.0).collect();
        let leads: Vec<Vec<u32>> = ats
            .iter()
            .map(|&a| {
                let others: Vec<usize> = ats.iter().copied().filter(|&x| x != a).collect();
                self.lead(a, &others)
            })
            .collect();
        // Every way into the branch: the keys of the writer code that ran
        // up to it, newest first (this pair's path, then those of the
        // pairs before it), with its occurrences and outcomes.
        let mut ways: Vec<(Vec<u32>, u64, u64, u64)> = Vec::new();
        let mut earlier: FxHashMap<(u64, u64), Vec<u32>> = FxHashMap::default();
        let mut done: FxHashSet<(u64, u64)> = FxHashSet::default();
        for &k in self.passing.get(&w_addr).into_iter().flatten() {
            let p = &self.conv.pairs[k];
            if !done.insert((p.from, p.to)) {
                continue;
            }
            // The pair's variants (a trace-cmp writer's switch values and
            // comparison outcomes) by what they do up to the branch and
            // there: (keys up to it, taken, not taken, occurrences).
            let mut kinds: Vec<(Vec<u32>, u64, u64, u64)> = Vec::new();
            for &v in self.by_pair.get(&(p.from, p.to)).into_iter().flatten() {
                let q = &self.conv.pairs[v];
                let Ok(path) = &q.path else { continue };
                let tk = path.taken.iter().filter(|b| b.0 == w_addr).count() as u64;
                let nt = path.not_taken.iter().filter(|&&b| b == w_addr).count() as u64;
                let mut here = Vec::new();
                if tk + nt > 0 {
                    self.keys_back(&self.walk(v, Some(w)), &mut here);
                }
                match kinds
                    .iter_mut()
                    .find(|x| x.0 == here && x.1 == tk && x.2 == nt)
                {
                    Some(x) => x.3 = x.3.saturating_add(q.count),
                    None => kinds.push((here, tk, nt, q.count)),
                }
            }
            let total: u64 = kinds.iter().map(|x| x.3).sum();
            let befores: Vec<(&[u64], u64)> = match self.before.get(&(p.from, p.to)) {
                Some(b) => b.iter().map(|(b, n)| (b.as_slice(), *n)).collect(),
                None => vec![(&[][..], total)],
            };
            for (sites, n) in befores {
                let mut ctx_before: Vec<u32> = Vec::new();
                let mut later = p.from;
                for &site in sites {
                    if site == 0 {
                        break;
                    }
                    let keys = earlier.entry((site, later)).or_insert_with(|| {
                        let mut keys = Vec::new();
                        if let Some(&j) = self.by_pair.get(&(site, later)).and_then(|v| v.first()) {
                            self.keys_back(&self.walk(j, None), &mut keys);
                        }
                        keys
                    });
                    ctx_before.extend(keys.iter().copied());
                    later = site;
                }
                // The chain's count among the variants, in proportion,
                // the rounding's remainder to the most frequent.
                let mut parts: Vec<u64> = kinds
                    .iter()
                    .map(|x| (n as u128 * x.3 as u128 / total.max(1) as u128) as u64)
                    .collect();
                let rest = n - parts.iter().fold(0u64, |a, &b| a.saturating_add(b)).min(n);
                if let Some(top) = (0..kinds.len()).max_by_key(|&i| kinds[i].3) {
                    parts[top] = parts[top].saturating_add(rest);
                }
                for ((here, tk, nt, _), part) in kinds.iter().zip(parts) {
                    if tk + nt == 0 || part == 0 {
                        continue;
                    }
                    let mut ctx = here.clone();
                    for &key in &ctx_before {
                        if !ctx.contains(&key) {
                            ctx.push(key);
                        }
                    }
                    ways.push((ctx, part, *tk, *nt));
                }
            }
        }
        // A key on every way in says nothing about which copy it reaches;
        // one on fewer of the distinct ways says more.
        let mut distinct: Vec<&Vec<u32>> = ways.iter().map(|w| &w.0).collect();
        distinct.sort();
        distinct.dedup();
        let mut on_ways: FxHashMap<u32, usize> = FxHashMap::default();
        for ctx in &distinct {
            for &k in ctx.iter() {
                *on_ways.entry(k).or_insert(0) += 1;
            }
        }
        let weight = |k: u32| match on_ways.get(&k) {
            Some(&n) if n < distinct.len() => 1.0 / n as f64,
            _ => 0.0,
        };
        let mut split = vec![(0u64, 0u64, true); copies.len()];
        let mut told = false;
        for (ctx, n, tk, nt) in &ways {
            let (n, tk, nt) = (*n, *tk, *nt);
            let scores: Vec<f64> = leads
                .iter()
                .map(|lead| {
                    ctx.iter()
                        .enumerate()
                        .filter_map(|(i, &k)| {
                            lead.iter()
                                .position(|&x| x == k)
                                .map(|j| weight(k) / (1.0 + (i + j) as f64))
                        })
                        .sum()
                })
                .collect();
            let best = scores.iter().copied().fold(f64::MIN, f64::max);
            let winners: Vec<usize> = (0..copies.len())
                .filter(|&c| scores[c] >= best - 1e-9)
                .collect();
            if winners.len() < copies.len() {
                told = true;
            }
            let alone = winners.len() == 1;
            for c in winners {
                let (t, f) = if copies[c].1 { (nt, tk) } else { (tk, nt) };
                // Saturating: counts from a file are not trusted.
                split[c].0 = split[c].0.saturating_add(t.saturating_mul(n));
                split[c].1 = split[c].1.saturating_add(f.saturating_mul(n));
                split[c].2 &= alone;
            }
        }
        told.then_some(split)
    }
}

/// `file:line` of writer instruction `i` for people, from its key.
fn describe_line(line: &FxHashMap<u32, String>, keys: &SourceKeys, i: usize) -> String {
    line.get(&keys.keys[i][0])
        .cloned()
        .unwrap_or_else(|| "?".into())
}

impl<'a> Analysed<'a> {
    /// Map the writer branches of `conv` onto the analysed binary `a`.
    /// `w_keys` and `a_keys` come from one [`Interner`].
    pub fn map(
        conv: &Converted<'_>,
        w_keys: &SourceKeys,
        a: &'a Code,
        a_keys: &SourceKeys,
        interner: &Interner,
    ) -> Result<Analysed<'a>, Error> {
        let w_code = conv.code;
        let m = Matcher::new(
            Side {
                code: w_code,
                keys: w_keys,
            },
            Side {
                code: a,
                keys: a_keys,
            },
        );
        let shared = w_code
            .functions
            .iter()
            .filter(|f| f.instrumented && m.a_func.contains_key(f.name.as_str()))
            .count();
        if shared == 0 {
            return Err(Error::BadInput(
                "the analysed program shares no instrumented function with the writer; give the ordinary build of the same sources".into(),
            ));
        }
        let (w_taken, w_not_taken) = conv.outcomes();
        let mut stats = MappingStats::default();
        let mut by_kind: FxHashMap<Kind, Tally> = FxHashMap::default();
        // Conditional pairs: (writer, analysed, inverted, taken, not taken),
        // and the groups of copies among them to pair again by count.
        let mut assign: Vec<(usize, usize, bool, u64, u64)> = Vec::new();
        let mut groups: FxHashMap<Vec<usize>, Vec<usize>> = FxHashMap::default();
        let mut shared: FxHashMap<usize, (u64, u64)> = FxHashMap::default();
        // Copies whose executions the ways into them split exactly.
        let mut split_counts: FxHashMap<usize, (u64, u64)> = FxHashMap::default();
        let mut targets: FxHashMap<usize, FxHashMap<u64, u64>> = FxHashMap::default();
        let mut lost: Vec<(usize, Kind, u64, Why)> = Vec::new();
        let contexts = Contexts::new(conv, &m.w, &m.a);
        let mut addrs: Vec<u64> = w_taken.keys().chain(w_not_taken.keys()).copied().collect();
        addrs.sort_unstable();
        addrs.dedup();
        for w_addr in addrs {
            let Some(&w) = w_code.at.get(&w_addr) else {
                continue;
            };
            let Some(kind) = Kind::of(w_code.insns[w].flow) else {
                continue;
            };
            let outs = w_taken.get(&w_addr);
            let taken: u64 = outs.map_or(0, |o| o.values().sum());
            let not = w_not_taken.get(&w_addr).copied().unwrap_or(0);
            let total = taken + not;
            let mut tally = |how: Match, n: u64| {
                by_kind.entry(kind).or_default().add(how, n);
                stats.all.add(how, n);
            };
            let c = match m.counterpart(w) {
                Ok(c) => c,
                Err(why) => {
                    tally(Match::Unmapped(why), total);
                    if why == Why::IfConverted {
                        stats.if_converted += total;
                    }
                    lost.push((w, kind, total, why));
                    continue;
                }
            };
            match kind {
                // More copies in the analysed build than in the writer
                // (loop versioning, jump threading): they share the
                // writer's taken probability, each at its own count.
                // What ran before each execution tells them apart where
                // the ways into the copies differ (a rotated loop's first
                // test and back edge, a threaded copy): a copy the ways in
                // were told to alone gets their counts, one they resembled
                // as much as another their probability, and one no way in
                // was told to keeps the shared probability.
                Kind::Conditional if c.copies.is_some() => {
                    let copies = c.copies.as_deref().unwrap_or(&[]);
                    let split = contexts.split(w, copies);
                    for (k, &(a, inv)) in copies.iter().enumerate() {
                        let (t, n) = match split.as_ref().map(|s| s[k]) {
                            Some((t, n, true)) if t + n > 0 => {
                                let e = split_counts.entry(a).or_default();
                                e.0 = e.0.saturating_add(t);
                                e.1 = e.1.saturating_add(n);
                                continue;
                            }
                            Some((t, n, false)) if t + n > 0 => (t, n),
                            _ if inv => (not, taken),
                            _ => (taken, not),
                        };
                        let e = shared.entry(a).or_default();
                        e.0 += t;
                        e.1 += n;
                    }
                    tally(c.how, total);
                }
                Kind::Conditional => {
                    if let Some(g) = c.group {
                        groups.entry(g).or_default().push(assign.len());
                    }
                    assign.push((w, c.at, c.inverted, taken, not));
                    tally(c.how, total);
                }
                // Layout decides these; the analysed binary's own flow
                // gives their counts below.
                Kind::Jump | Kind::Call => tally(c.how, total),
                Kind::IndirectJump | Kind::IndirectCall | Kind::Return => {
                    let mut missed = 0;
                    for (&to, &n) in outs.into_iter().flatten() {
                        match m.target(w, c.at, to) {
                            Some(t) => *targets.entry(c.at).or_default().entry(t).or_insert(0) += n,
                            None => missed += n,
                        }
                    }
                    tally(c.how, total - missed);
                    if missed > 0 {
                        tally(Match::Unmapped(Why::Target), missed);
                        lost.push((w, kind, missed, Why::Target));
                    }
                }
            }
        }
        // A build of other sources shares a few helpers at most: refuse it
        // rather than write a profile that is mostly missing.
        let mapped = stats.all.unique + stats.all.ambiguous;
        if stats.all.total() > 0 && mapped * 2 < stats.all.total() {
            return Err(Error::BadInput(format!(
                "the analysed program takes only {:.1}% of the writer's branch executions; it is not the ordinary build of the writer's sources (same sources and options, without coverage, with -g)",
                100.0 * mapped as f64 / stats.all.total() as f64
            )));
        }
        let mut kinds: Vec<(Kind, Tally)> = by_kind.into_iter().collect();
        kinds.sort_by_key(|k| k.0 as u8);
        stats.by_kind = kinds;

        // Entry counts: the writer's, where its entry block's coverage
        // call says exactly how often the function began.
        let entries = writer_entries(conv.recording, w_code);
        let mut entry: FxHashMap<u32, u64> = FxHashMap::default();
        for (w_entry, n) in entries {
            if let Some(f) = m.a_function(w_entry) {
                entry.insert(f, n);
            }
        }
        let mut line: FxHashMap<u32, String> = FxHashMap::default();
        for (key, &id) in &interner.0 {
            if let Some(f) = key.frames.first() {
                line.insert(id, format!("{}:{}", key.file, f.1));
            }
        }
        lost.sort_by(|x, y| y.2.cmp(&x.2).then(x.0.cmp(&y.0)));
        let unmapped = lost
            .into_iter()
            .map(|(w, kind, n, why)| UnmappedSite {
                addr: format!("{:#x}", w_code.insns[w].addr),
                at: w_code.describe(w_code.insns[w].addr),
                line: describe_line(&line, w_keys, w),
                kind,
                executions: n,
                why,
            })
            .collect();
        let mut out = Analysed {
            code: a,
            exec: Vec::new(),
            taken: FxHashMap::default(),
            not_taken: FxHashMap::default(),
            stats,
            unmapped,
            pieces: Vec::new(),
        };
        let fixed = |assign: &[(usize, usize, bool, u64, u64)]| {
            let mut cond: FxHashMap<usize, (u64, u64)> = split_counts.clone();
            for &(_, a, inv, t, n) in assign {
                let e = cond.entry(a).or_default();
                let (t, n) = if inv { (n, t) } else { (t, n) };
                e.0 += t;
                e.1 += n;
            }
            cond
        };
        let share: FxHashMap<usize, f64> = shared
            .into_iter()
            .filter(|(a, (t, n))| {
                !assign.iter().any(|x| x.1 == *a) && !split_counts.contains_key(a) && t + n > 0
            })
            .map(|(a, (t, n))| (a, t as f64 / (t + n) as f64))
            .collect();
        let (mut exec, mut cond) = out.propagate(fixed(&assign), &share, &targets, &entry);
        // Copies of one source branch that their surroundings did not tell
        // apart: pair them so that each analysed copy runs as often as the
        // writer's copy paired with it, by the propagated counts; again
        // until the pairing holds.
        for _ in 0..4 {
            let mut changed = false;
            for (group, members) in &groups {
                if members.len() != group.len() {
                    continue;
                }
                let cost = |perm: &[usize]| -> u64 {
                    members
                        .iter()
                        .zip(perm)
                        .map(|(&k, &a)| exec[a].abs_diff(assign[k].3 + assign[k].4))
                        .sum()
                };
                let current: Vec<usize> = members.iter().map(|&k| assign[k].1).collect();
                let mut best = (cost(&current), current.clone());
                for perm in permutations(group) {
                    let c = cost(&perm);
                    if c < best.0 {
                        best = (c, perm);
                    }
                }
                if best.1 != current {
                    changed = true;
                    for (&k, &a) in members.iter().zip(&best.1) {
                        let (same, inv) = m.sense(assign[k].0, a);
                        assign[k].1 = a;
                        assign[k].2 = inv > same;
                    }
                }
            }
            if !changed {
                break;
            }
            (exec, cond) = out.propagate(fixed(&assign), &share, &targets, &entry);
        }
        out.exec = exec;
        out.collect(&cond, &targets, &entry);
        Ok(out)
    }

    /// Propagate execution counts through the analysed binary: each
    /// function starts with its entry count (the writer's, else the calls
    /// and jumps that reach it), instructions pass their count on,
    /// conditional branches split it as mapped (one with no counterpart
    /// passes it on as a fall-through), direct jumps and calls carry what
    /// reaches them, and indirect branches and returns send their mapped
    /// counts to their mapped targets; copies that share a writer
    /// branch's probability (`share`) split what reaches them by it.
    /// Repeated until nothing changes (a loop's back edge needs one more
    /// round per nesting level). Returns each instruction's executions and
    /// every conditional's (taken, not taken).
    fn propagate(
        &self,
        mut cond: FxHashMap<usize, (u64, u64)>,
        share: &FxHashMap<usize, f64>,
        targets: &FxHashMap<usize, FxHashMap<u64, u64>>,
        entry: &FxHashMap<u32, u64>,
    ) -> (Vec<u64>, FxHashMap<usize, (u64, u64)>) {
        let code = self.code;
        let n = code.insns.len();
        // Whether a transfer into `t` counts: not into the entry of a
        // function whose entry count is known (that count has every
        // entry, recursive calls included).
        let counts_into = |t: u64| {
            let &ti = code.at.get(&t)?;
            let f = code.insns[ti].func;
            (!(t == code.functions[f as usize].entry && entry.contains_key(&f))).then_some(ti)
        };
        let mut exec = vec![0u64; n];
        let mut rounds = 0;
        loop {
            let mut inflow = vec![0u64; n];
            for (&f, &c) in entry {
                if let Some(&i) = code.at.get(&code.functions[f as usize].entry) {
                    inflow[i] += c;
                }
            }
            for (i, insn) in code.insns.iter().enumerate() {
                let mut send = |t: u64, c: u64| {
                    if let Some(ti) = counts_into(t) {
                        inflow[ti] += c;
                    }
                };
                match insn.flow {
                    Flow::Cond(t) => {
                        if let Some(&(tk, _)) = cond.get(&i) {
                            send(t, tk);
                        } else if let Some(&p) = share.get(&i) {
                            send(t, part(exec[i], p));
                        }
                    }
                    Flow::Jump(t) | Flow::Call(t) => send(t, exec[i]),
                    Flow::JumpIndirect | Flow::CallIndirect => {
                        for (&t, &c) in targets.get(&i).into_iter().flatten() {
                            send(t, c);
                        }
                    }
                    _ => {}
                }
            }
            let mut next = vec![0u64; n];
            let mut carry = 0u64;
            for i in 0..n {
                let insn = code.insns[i];
                if i > 0 && code.insns[i - 1].func != insn.func {
                    carry = 0;
                }
                next[i] = carry + inflow[i];
                carry = match insn.flow {
                    Flow::Next | Flow::Call(_) | Flow::CallIndirect => next[i],
                    Flow::Cond(_) => match (cond.get(&i), share.get(&i)) {
                        (Some(c), _) => c.1,
                        (None, Some(&p)) => next[i] - part(next[i], p),
                        (None, None) => next[i],
                    },
                    _ => 0,
                };
                if Some(insn.addr) == code.callback || insn.next == insn.addr {
                    carry = 0;
                }
            }
            rounds += 1;
            let done = next == exec;
            exec = next;
            if done || rounds >= 200 {
                break;
            }
        }
        for (&i, &p) in share {
            let t = part(exec[i], p);
            cond.insert(i, (t, exec[i] - t));
        }
        (exec, cond)
    }

    /// The branch outcomes of the propagated counts, and the execution cut
    /// into straight-line pieces, each from where a taken branch entered
    /// to where one left, for BOLT and `llvm-profgen`.
    fn collect(
        &mut self,
        cond: &FxHashMap<usize, (u64, u64)>,
        targets: &FxHashMap<usize, FxHashMap<u64, u64>>,
        entry: &FxHashMap<u32, u64>,
    ) {
        let code = self.code;
        let exec = &self.exec;
        let mut taken: FxHashMap<u64, FxHashMap<u64, u64>> = FxHashMap::default();
        let mut not_taken: FxHashMap<u64, u64> = FxHashMap::default();
        // Where branches go, per source: (target, count).
        let mut outs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); code.insns.len()];
        for (i, insn) in code.insns.iter().enumerate() {
            let e = exec[i];
            match insn.flow {
                Flow::Cond(t) => match cond.get(&i) {
                    Some(&(tk, nt)) => {
                        outs[i].push((t, tk));
                        if nt > 0 {
                            not_taken.insert(insn.addr, nt);
                        }
                    }
                    None => {
                        if e > 0 {
                            self.stats.analysed_conditionals_without_counterpart += e;
                        }
                    }
                },
                Flow::Jump(t) | Flow::Call(t) => outs[i].push((t, e)),
                Flow::JumpIndirect | Flow::CallIndirect | Flow::Ret => {
                    outs[i].extend(targets.get(&i).into_iter().flatten().map(|(&t, &c)| (t, c)));
                    outs[i].sort_unstable();
                }
                _ => {}
            }
            outs[i].retain(|o| o.1 > 0);
            for &(t, c) in &outs[i] {
                *taken.entry(insn.addr).or_default().entry(t).or_insert(0) += c;
            }
        }
        self.stats.entries_from_writer = entry.len() as u64;
        self.stats.entries_from_calls = code
            .functions
            .iter()
            .enumerate()
            .filter(|(f, fun)| {
                !entry.contains_key(&(*f as u32))
                    && code.at.get(&fun.entry).is_some_and(|&i| exec[i] > 0)
            })
            .count() as u64;

        // Pieces: walk each function in address order with the ranges
        // that are open (started by an incoming branch, still running
        // straight); a branch closes as many as it takes, newest first.
        let mut incoming: FxHashMap<u64, u64> = FxHashMap::default();
        for tos in taken.values() {
            for (&to, &c) in tos {
                // What the propagation let in: a transfer into the entry of
                // a function with a known entry count is in that count.
                let known_entry = code.insn(to).is_some_and(|t| {
                    to == code.functions[t.func as usize].entry && entry.contains_key(&t.func)
                });
                if !known_entry {
                    *incoming.entry(to).or_insert(0) += c;
                }
            }
        }
        for (&f, &c) in entry {
            *incoming
                .entry(code.functions[f as usize].entry)
                .or_insert(0) += c;
        }
        let mut pieces = Vec::new();
        let mut open: Vec<(u64, u64)> = Vec::new(); // (start, count)
        for (i, insn) in code.insns.iter().enumerate() {
            if i > 0 && code.insns[i - 1].func != insn.func {
                open.clear();
            }
            if let Some(&c) = incoming.get(&insn.addr) {
                open.push((insn.addr, c));
            }
            let mut close = |to: u64, mut c: u64, open: &mut Vec<(u64, u64)>| {
                while c > 0 {
                    let Some(last) = open.last_mut() else { break };
                    let k = last.1.min(c);
                    pieces.push(Piece {
                        start: last.0,
                        end: insn.addr,
                        to,
                        count: k,
                    });
                    last.1 -= k;
                    c -= k;
                    if last.1 == 0 {
                        open.pop();
                    }
                }
            };
            for &(t, c) in &outs[i] {
                close(t, c, &mut open);
            }
            match insn.flow {
                // Straight on; a conditional branch with no counterpart
                // passes its count on as a fall-through.
                Flow::Next => {}
                Flow::Cond(_) if !cond.contains_key(&i) => {}
                Flow::Cond(_) => {
                    // What the fall-through does not account for ends here
                    // (the mapped counts disagree with the propagated ones).
                    let keep = not_taken.get(&insn.addr).copied().unwrap_or(0);
                    let mut have: u64 = open.iter().map(|o| o.1).sum();
                    while have > keep {
                        let last = open.last_mut().expect("have > keep");
                        let k = last.1.min(have - keep);
                        last.1 -= k;
                        have -= k;
                        if last.1 == 0 {
                            open.pop();
                        }
                    }
                }
                Flow::Call(_) | Flow::CallIndirect => {
                    open.clear();
                    // The callee returns here. What its mapped returns do
                    // not bring back (a callee outside the binary's code,
                    // the PLT to libc; a return that did not map) starts
                    // here too.
                    let back = incoming.get(&insn.next).copied().unwrap_or(0);
                    if exec[i] > back {
                        incoming.insert(insn.next, exec[i]);
                    }
                }
                // A transfer whose targets did not map (main's return
                // into libc): the code still ran up to it.
                _ => {
                    for (start, c) in open.drain(..) {
                        pieces.push(Piece {
                            start,
                            end: insn.addr,
                            to: UNKNOWN,
                            count: c,
                        });
                    }
                }
            }
        }
        self.pieces = pieces;
        self.taken = taken;
        self.not_taken = not_taken;
    }

    /// Every executed branch instruction of the analysed binary.
    pub fn branch_sites(&self) -> Vec<BranchSite> {
        convert::sites(self.code, &self.taken, &self.not_taken)
    }

    /// BOLT's pre-aggregated profile of the analysed binary: `B` per taken
    /// branch, `F` per straight-line piece.
    pub fn bolt_preaggregated(&self) -> BoltProfile {
        let mut branches: FxHashMap<Branch, u64> = FxHashMap::default();
        let mut profile = BoltProfile::default();
        for (&from, tos) in &self.taken {
            for (&to, &n) in tos {
                *branches.entry((from, to)).or_insert(0) += n;
                profile.path_branches += n;
            }
        }
        let mut ranges: FxHashMap<Branch, u64> = FxHashMap::default();
        for p in &self.pieces {
            *ranges.entry((p.start, p.end)).or_insert(0) += p.count;
        }
        profile.text = convert::bolt_text(branches, ranges);
        profile
    }

    /// `perf script` branch stacks of the analysed binary for
    /// `llvm-profgen`, scaled to at most `max_samples` lines.
    ///
    /// The straight-line pieces are chained the way the execution joined
    /// them (a piece's leaving branch goes where the next one starts), up
    /// to 15 pieces a line, as a 16-entry hardware LBR holds them. The
    /// oldest entry of a line is a real branch into its first piece, so a
    /// branch is counted twice only where one line ends and another
    /// begins, as in real LBR samples. A piece no branch of the binary
    /// enters (after a call into libc) gets an entry from the instruction
    /// before it, which `llvm-profgen` counts for nothing (its target is
    /// not a function); one at a function entered from outside (`main`)
    /// is left out. A call into libc is written as going to its return
    /// site (see below).
    pub fn perfscript(
        &self,
        binary: &Path,
        bytes: &[u8],
        max_samples: u64,
    ) -> Result<String, Error> {
        let code = self.code;
        let mut out = convert::mmap_line(binary, bytes)?;
        // A real branch into each target, for the oldest entry.
        let mut into: FxHashMap<u64, u64> = FxHashMap::default();
        for (&from, tos) in &self.taken {
            for &to in tos.keys() {
                into.entry(to)
                    .and_modify(|f| *f = (*f).min(from))
                    .or_insert(from);
            }
        }
        // A call out of the binary's code (into libc through the PLT) is
        // written as going to its return site, where the next piece
        // starts: the stack then stays inside the binary, as llvm-profgen
        // wants, and counts no call target for it.
        let pieces: Vec<Piece> = self
            .pieces
            .iter()
            .map(|&p| match code.insn(p.end) {
                Some(i) if matches!(i.flow, Flow::Call(_)) && code.insn(p.to).is_none() => {
                    Piece { to: i.next, ..p }
                }
                _ => p,
            })
            .collect();
        let mut left: Vec<u64> = pieces.iter().map(|p| p.count).collect();
        let mut by_start: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        for (k, p) in pieces.iter().enumerate() {
            by_start.entry(p.start).or_default().push(k);
        }
        let mut lines: Vec<(String, u64)> = Vec::new();
        let mut order: Vec<usize> = (0..pieces.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(pieces[k].count));
        for first in order {
            if pieces[first].to == UNKNOWN {
                continue;
            }
            while left[first] > 0 {
                let p = pieces[first];
                let entry = into.get(&p.start).copied().or_else(|| {
                    let i = *code.at.get(&p.start)?;
                    let f = code.insns[i].func as usize;
                    (p.start != code.functions[f].entry && i > 0).then(|| code.insns[i - 1].addr)
                });
                let Some(entry) = entry else {
                    left[first] = 0;
                    break;
                };
                // The chain: each next piece starts where the last one's
                // branch went and has count left; the line's count is the
                // least along it.
                let mut chain = vec![first];
                let mut n = left[first];
                while chain.len() < STACK {
                    let last = pieces[*chain.last().expect("non-empty")];
                    let next = by_start.get(&last.to).and_then(|ks| {
                        ks.iter()
                            .copied()
                            .filter(|&k| left[k] > 0 && pieces[k].to != UNKNOWN)
                            .filter(|&k| !chain.contains(&k))
                            .max_by_key(|&k| left[k])
                    });
                    let Some(k) = next else { break };
                    chain.push(k);
                    n = n.min(left[k]);
                }
                let mut line = String::new();
                for &k in chain.iter().rev() {
                    let q = pieces[k];
                    let _ = write!(line, " {:#x}/{:#x}/P/-/-/0", q.end, q.to);
                    left[k] -= n;
                }
                let _ = writeln!(line, " {entry:#x}/{:#x}/P/-/-/0", p.start);
                lines.push((line, n));
            }
        }
        let total: u64 = lines.iter().map(|l| l.1).sum();
        let scale = if total > max_samples {
            max_samples as f64 / total as f64
        } else {
            1.0
        };
        for (line, n) in lines {
            for _ in 0..(n as f64 * scale).round() as u64 {
                out.push_str(&line);
            }
        }
        Ok(out)
    }

    /// One line for people: how many of the writer's branch executions
    /// mapped uniquely, ambiguously and not at all.
    pub fn summary(&self) -> String {
        let s = &self.stats;
        let pct = |n: u64| 100.0 * n as f64 / s.all.total().max(1) as f64;
        let mut t = format!(
            "mapped onto the analysed binary: {} writer branch executions, {:.2}% uniquely, {:.2}% ambiguously, {:.2}% not at all",
            s.all.total(),
            pct(s.all.unique),
            pct(s.all.ambiguous),
            pct(s.all.unmapped)
        );
        if s.if_converted > 0 {
            let _ = write!(t, " ({:.2}% if-converted there)", pct(s.if_converted));
        }
        t
    }
}

/// The target of a piece's leaving branch when it did not map: the piece
/// goes into BOLT's ranges, not into branch stacks.
const UNKNOWN: u64 = 0;

/// Pieces in one `perf script` line: branch stacks of 16 entries, as the
/// LBR of many Intel cores holds.
const STACK: usize = 15;

/// Every order of `items` (a few).
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}

/// The taken share `p` of `n` executions.
fn part(n: u64, p: f64) -> u64 {
    ((n as f64 * p).round() as u64).min(n)
}

/// How often each writer function began, from the coverage call of its
/// entry block: (entry address, count), for functions whose first
/// coverage call comes before any branch.
fn writer_entries(rec: &Recording, code: &Code) -> Vec<(u64, u64)> {
    let mut site: FxHashMap<u64, u64> = FxHashMap::default();
    for p in &rec.pairs {
        *site.entry(p.to).or_insert(0) += p.count;
    }
    let mut out = Vec::new();
    for f in code.functions.iter().filter(|f| f.instrumented) {
        let Some(&start) = code.at.get(&f.entry) else {
            continue;
        };
        let func = code.insns[start].func;
        for insn in code.insns[start..].iter().take_while(|i| i.func == func) {
            match insn.flow {
                Flow::Call(t) if Some(t) == code.callback => {
                    out.push((f.entry, site.get(&insn.next).copied().unwrap_or(0)));
                    break;
                }
                Flow::Next => {}
                _ => break,
            }
        }
    }
    out
}

/// Check that `analysed` can be the analysed program of a writer: an ELF
/// file with line tables and without the coverage callback (an ordinary
/// build, not a writer). Returns its bytes and hash.
pub fn check_analysed(analysed: &Path) -> Result<(Vec<u8>, String), Error> {
    use object::{Object, ObjectSymbol};
    let bytes = std::fs::read(analysed).map_err(|e| Error::io(analysed, e))?;
    let file = object::File::parse(&*bytes).map_err(|_| {
        Error::BadInput(format!(
            "{} is not an ELF executable; give the ordinary build of the writer's sources",
            analysed.display()
        ))
    })?;
    if file
        .symbols()
        .any(|s| s.name() == Ok("__sanitizer_cov_trace_pc"))
    {
        return Err(Error::BadInput(format!(
            "{} is a writer (it has __sanitizer_cov_trace_pc); give the ordinary build, without coverage",
            analysed.display()
        )));
    }
    if file.section_by_name(".debug_line").is_none()
        || file.section_by_name(".debug_info").is_none()
    {
        return Err(Error::BadInput(format!(
            "{} has no debugging information (.debug_info/.debug_line); build the analysed program with -g",
            analysed.display()
        )));
    }
    let hash = crate::recording::fnv_hex(&bytes);
    Ok((bytes, hash))
}

/// Everything [`Analysed::map`] needs, read from the two binaries.
pub struct Pair {
    /// The writer's source keys.
    pub w_keys: SourceKeys,
    /// The analysed binary's code.
    pub a_code: Code,
    /// Its source keys.
    pub a_keys: SourceKeys,
    /// The keys' names.
    pub interner: Interner,
}

impl Pair {
    /// Disassemble the analysed binary and read both binaries' line tables.
    pub fn load(
        writer: &Path,
        w_bytes: &[u8],
        w_code: &Code,
        analysed: &Path,
        a_bytes: &[u8],
    ) -> Result<Pair, Error> {
        let mut interner = Interner::default();
        let w_keys = SourceKeys::read(writer, w_bytes, w_code, &mut interner)?;
        let a_code = Code::load(analysed)?;
        let a_keys = SourceKeys::read(analysed, a_bytes, &a_code, &mut interner)?;
        Ok(Pair {
            w_keys,
            a_code,
            a_keys,
            interner,
        })
    }

    /// The converted recording's branches in the analysed binary.
    pub fn map<'a>(&'a self, conv: &Converted<'_>) -> Result<Analysed<'a>, Error> {
        Analysed::map(
            conv,
            &self.w_keys,
            &self.a_code,
            &self.a_keys,
            &self.interner,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f: a conditional (mapped: taken 3, not taken 7) around a block that
    /// ends in a jump whose count only the propagation knows; both paths
    /// meet at a call into libc and a return.
    const F: &str = "\
0000000000001000 <f>:
    1000:\tcmp    %eax,%edx
    1002:\tje     1010 <f+0x10>
    1004:\tmov    %eax,%edx
    1006:\tjmp    1020 <f+0x20>
    1010:\tmov    %edx,%eax
    1012:\tnop
    1020:\tcall   900 <puts@plt>
    1025:\tret
";

    fn analysed(code: &Code) -> Analysed<'_> {
        Analysed {
            code,
            exec: Vec::new(),
            taken: FxHashMap::default(),
            not_taken: FxHashMap::default(),
            stats: MappingStats::default(),
            unmapped: Vec::new(),
            pieces: Vec::new(),
        }
    }

    #[test]
    fn counts_flow_through_layout_the_writer_did_not_have() {
        let code = Code::parse(F);
        let mut a = analysed(&code);
        let cond: FxHashMap<usize, (u64, u64)> = [(1, (3, 7))].into_iter().collect();
        let entry: FxHashMap<u32, u64> = [(0, 10)].into_iter().collect();
        let (exec, cond) = a.propagate(cond, &FxHashMap::default(), &FxHashMap::default(), &entry);
        // The jump runs as often as the fall-through; the join as both.
        assert_eq!(exec, vec![10, 10, 7, 7, 3, 3, 10, 10]);
        a.exec = exec;
        a.collect(&cond, &FxHashMap::default(), &entry);
        let bolt = a.bolt_preaggregated().text;
        assert_eq!(
            bolt,
            "B 1002 1010 3 0\nB 1006 1020 7 0\nB 1020 900 10 0\n\
             F 1000 1002 3\nF 1000 1006 7\nF 1010 1020 3\nF 1020 1020 7\nF 1025 1025 10\n"
        );
        let mut counts: Vec<(u64, u64, u64)> = a
            .branch_sites()
            .iter()
            .map(|b| {
                let hex = |s: &str| u64::from_str_radix(&s[2..], 16).unwrap();
                (hex(&b.addr), b.executions, b.taken)
            })
            .collect();
        counts.sort_unstable();
        assert_eq!(
            counts,
            vec![(0x1002, 10, 3), (0x1006, 7, 7), (0x1020, 10, 10)]
        );
    }

    #[test]
    fn copies_share_a_probability_at_their_own_counts() {
        let code = Code::parse(F);
        let a = analysed(&code);
        let share: FxHashMap<usize, f64> = [(1, 0.25)].into_iter().collect();
        let entry: FxHashMap<u32, u64> = [(0, 8)].into_iter().collect();
        let (exec, cond) = a.propagate(FxHashMap::default(), &share, &FxHashMap::default(), &entry);
        assert_eq!(cond[&1], (2, 6));
        assert_eq!(exec[3], 6, "the jump after the fall-through");
    }

    /// A `switch`'s tests, all on one source line: the writer branches
    /// on each; the analysed build computes the last (`'|'`) with a
    /// conditional move.
    const W_SWITCH: &str = "\
0000000000001000 <apply>:
    1000:\tcmp    $0x5e,%bl
    1003:\tjg     1020 <apply+0x20>
    1005:\tcmp    $0x24,%bl
    1008:\tjle    1030 <apply+0x30>
    100a:\tcmp    $0x39,%bl
    100d:\tja     1030 <apply+0x30>
    100f:\tjmp    *%rax
    1020:\tcmp    $0x7c,%bl
    1023:\tjne    1030 <apply+0x30>
    1030:\tret
";
    const A_SWITCH: &str = "\
0000000000002000 <apply>:
    2000:\tcmp    $0x5e,%dil
    2004:\tjg     2020 <apply+0x20>
    2006:\tcmp    $0x24,%dil
    200a:\tjle    2030 <apply+0x30>
    200c:\tcmp    $0x39,%dil
    2010:\tja     2030 <apply+0x30>
    2012:\tjmp    *%rax
    2020:\tcmp    $0x7c,%dil
    2024:\tcmove  %esi,%edi
    2027:\tret
    2030:\tret
";

    #[test]
    fn the_tests_of_a_switch_pair_by_the_constant_they_compare_with() {
        let (w, a) = (Code::parse(W_SWITCH), Code::parse(A_SWITCH));
        // Every instruction on one line: only the machine code tells the
        // tests apart.
        let keys = |code: &Code| SourceKeys {
            keys: vec![[7; LEVELS]; code.insns.len()],
        };
        let (wk, ak) = (keys(&w), keys(&a));
        let m = Matcher::new(
            Side {
                code: &w,
                keys: &wk,
            },
            Side {
                code: &a,
                keys: &ak,
            },
        );
        let at = |code: &Code, addr: u64| code.at[&addr];
        for (wa, aa) in [(0x1003, 0x2004), (0x1008, 0x200a), (0x100d, 0x2010)] {
            let c = m.counterpart(at(&w, wa)).unwrap();
            assert_eq!(a.insns[c.at].addr, aa, "{wa:x}");
        }
        // The '|' test has no branch in the analysed build: not mapped onto
        // one of the others.
        assert_eq!(m.counterpart(at(&w, 0x1023)).err(), Some(Why::IfConverted));
    }

    /// A dispatch through a jump table (base in `%rdx`, two entries) in
    /// function `next` at `base`, its table at `base + 0x2000`.
    fn dispatch(base: u64) -> Code {
        let text = format!(
            "\
{base:016x} <next>:
    {:x}:\tlea    0x0(%rip),%rdx        # {:x} <tbl>
    {:x}:\tmovslq (%rdx,%rax,4),%rax
    {:x}:\tadd    %rdx,%rax
    {:x}:\tjmp    *%rax
    {:x}:\tret
    {:x}:\tret
",
            base,
            base + 0x2000,
            base + 7,
            base + 0xb,
            base + 0xe,
            base + 0x10,
            base + 0x11
        );
        let table = base + 0x2000;
        Code::parse_with_data(&text, &|addr, len| {
            let k = addr.checked_sub(table)? / 4;
            let to = *[base + 0x10, base + 0x11].get(k as usize)?;
            let off = (to as i64 - table as i64) as i32;
            (len == 4).then(|| off.to_le_bytes().to_vec())
        })
    }

    #[test]
    fn a_dispatch_without_a_line_maps_to_the_table_jump_at_the_same_place() {
        let (w, a) = (dispatch(0x1000), dispatch(0x5000));
        assert_eq!(w.tables[&0x100e], vec![0x1010, 0x1011]);
        // clang gives a switch's dispatch line 0: no key on either side.
        let keys = |code: &Code| SourceKeys {
            keys: vec![[NO_KEY; LEVELS]; code.insns.len()],
        };
        let (wk, ak) = (keys(&w), keys(&a));
        let m = Matcher::new(
            Side {
                code: &w,
                keys: &wk,
            },
            Side {
                code: &a,
                keys: &ak,
            },
        );
        let c = m.counterpart(w.at[&0x100e]).unwrap();
        assert_eq!(a.insns[c.at].addr, 0x500e);
        assert_eq!(c.how, Match::Ambiguous);
        // Other branches without a line stay unmapped.
        assert_eq!(m.counterpart(w.at[&0x1010]).err(), Some(Why::NoLine));
    }

    #[test]
    fn small_helpers() {
        assert_eq!(permutations(&[1, 2, 3]).len(), 6);
        assert_eq!(permutations(&[4]), vec![vec![4]]);
        assert_eq!(part(10, 0.25), 3);
        assert_eq!(part(3, 1.5), 3);
        // Earlier shared keys weigh more; nothing shared is 0.
        assert!(similarity(&[1, 2], &[1, 9]) > similarity(&[1, 2], &[9, 2]));
        assert_eq!(similarity(&[1], &[2]), 0.0);
        // A sequence's end gives way to the next sequence at one address.
        let rows = vec![
            (0x10, false, 1),
            (0x20, true, 0),
            (0x20, false, 2),
            (0x30, true, 0),
        ];
        assert_eq!(row_at(&rows, 0x18), 1);
        assert_eq!(row_at(&rows, 0x24), 2);
        assert_eq!(row_at(&rows, 0x30), 0);
        assert_eq!(row_at(&rows, 0x8), 0);
    }
}
