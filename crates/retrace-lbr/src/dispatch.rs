//! Which way a `switch` went, from the value it dispatched on.
//!
//! gcc lowers a `switch` after its coverage pass runs: a range check and a
//! jump table, or a tree of comparisons, and the blocks that only set a
//! value and jump on get no coverage call. So between two sites, one pair,
//! there are often several machine paths — the range check and a table
//! entry that both reach the default case; a case block per value of the
//! table that all reach the same join. A writer built with
//! `-fsanitize-coverage=trace-pc,trace-cmp` also reports the value each
//! `switch` dispatches on (`__sanitizer_cov_trace_switch`), recorded with
//! the pair that leaves the switch's block ([`crate::recording::PairCount::value`]).
//!
//! [`decide`] runs the dispatch code forward from that call with the value
//! in hand: it follows the register the value was passed from through
//! moves, extensions, `lea`/`add`/`sub` of constants, compares and jump-table
//! loads, and notes which way each branch whose outcome that fixes went.
//! It stops at the first branch it cannot decide, so what it returns is
//! true of every execution with that value, whatever the lowering; the
//! path search then only takes those edges. Nothing here is specific to
//! one program: it reads the machine code the compiler emitted.

use crate::disasm::{Code, Flow};
use rustc_hash::FxHashMap;

/// The 64-bit register a register name belongs to, and the name's width
/// in bits.
fn register(name: &str) -> Option<(u8, u32)> {
    let n = name.strip_prefix('%')?;
    const LEGACY: [[&str; 4]; 8] = [
        ["rax", "eax", "ax", "al"],
        ["rcx", "ecx", "cx", "cl"],
        ["rdx", "edx", "dx", "dl"],
        ["rbx", "ebx", "bx", "bl"],
        ["rsp", "esp", "sp", "spl"],
        ["rbp", "ebp", "bp", "bpl"],
        ["rsi", "esi", "si", "sil"],
        ["rdi", "edi", "di", "dil"],
    ];
    const WIDTHS: [u32; 4] = [64, 32, 16, 8];
    for (r, names) in LEGACY.iter().enumerate() {
        if let Some(w) = names.iter().position(|&x| x == n) {
            return Some((r as u8, WIDTHS[w]));
        }
    }
    let rest = n.strip_prefix('r')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let r: u8 = digits.parse().ok().filter(|&r| (8..16).contains(&r))?;
    let width = match &rest[digits.len()..] {
        "" => 64,
        "d" => 32,
        "w" => 16,
        "b" => 8,
        _ => return None,
    };
    Some((r, width))
}

/// Registers a call may change (System V x86-64): rax, rcx, rdx, rsi, rdi,
/// r8–r11.
const CALLER_SAVED: [u8; 9] = [0, 1, 2, 6, 7, 8, 9, 10, 11];

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn sign_extend(v: u64, width: u32) -> i64 {
    if width >= 64 {
        v as i64
    } else {
        let s = 64 - width;
        ((v << s) as i64) >> s
    }
}

/// An immediate operand `$0x…` or `$-0x…`.
fn immediate(op: &str) -> Option<u64> {
    let v = op.strip_prefix('$')?;
    match v.strip_prefix("-0x") {
        Some(h) => u64::from_str_radix(h, 16).ok().map(u64::wrapping_neg),
        None => u64::from_str_radix(v.strip_prefix("0x")?, 16).ok(),
    }
}

/// `disp(%reg)` with no index: (register, displacement).
fn displaced(op: &str) -> Option<(u8, u64)> {
    let (disp, inner) = op.split_once('(')?;
    let inner = inner.strip_suffix(')')?;
    if inner.contains(',') {
        return None;
    }
    let d = if disp.is_empty() {
        0
    } else {
        match disp.strip_prefix("-0x") {
            Some(h) => u64::from_str_radix(h, 16).ok()?.wrapping_neg(),
            None => u64::from_str_radix(disp.strip_prefix("0x")?, 16).ok()?,
        }
    };
    Some((register(inner)?.0, d))
}

/// The index register of a table access `…(%base,%idx,4)` or `…(,%idx,8)`.
fn table_index(op: &str) -> Option<u8> {
    let inner = op.split_once('(')?.1.strip_suffix(')')?;
    let mut parts = inner.split(',');
    let _base = parts.next()?;
    register(parts.next()?).map(|r| r.0)
}

/// Split AT&T operands at top-level commas.
fn operands(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text.trim().is_empty() {
        out.push(text[start..].trim());
    }
    out
}

/// What a pair carries besides its two sites (see
/// [`crate::recording::PairCount`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// The value the block's `switch` dispatched on.
    pub value: Option<u64>,
    /// The block's comparison outcomes, packed as the runtime sends them.
    pub relations: Option<u16>,
}

/// Concrete low bits of a value.
#[derive(Clone, Copy)]
struct Known {
    value: u64,
    bits: u32,
}

/// A register's (or stack slot's) content: its low `bits` bits are those
/// of value number `id`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Reg {
    id: u32,
    bits: u32,
}

/// Flags from comparing `a` with `b` at `width` bits (`cmp $b,a`; `test
/// a,a` and logic results are the comparison with 0).
#[derive(Clone, Copy)]
struct Flags {
    a: u64,
    b: u64,
    width: u32,
}

/// What the flags say.
#[derive(Clone, Copy)]
enum State {
    /// Both sides known.
    Concrete(Flags),
    /// The compared x and y are the two sides of a recorded comparison
    /// whose relation (bit 0 equal, 1 below unsigned, 2 below signed, of x
    /// to y) is `rel`.
    Related(u8),
    /// x stood in relation `rel` to the constant `c`, and is now compared
    /// with the constant `with`, at `width` bits.
    Bounded {
        rel: u8,
        c: u64,
        with: u64,
        width: u32,
    },
}

/// A recorded comparison: its two sides (value numbers, with the width it
/// compared at) and how they came out.
struct Fact {
    a: Vec<u32>,
    b: Vec<u32>,
    a_value: Option<u64>,
    b_value: Option<u64>,
    width: u32,
    rel: u8,
}

/// The relation of y to x, from that of x to y.
fn swapped(rel: u8) -> u8 {
    let eq = rel & 1;
    let below = |bit: u8| u8::from(eq == 0 && rel & bit == 0);
    eq | below(2) << 1 | below(4) << 2
}

/// Whether condition `cc` (the jcc mnemonic without `j`) holds.
fn holds(cc: &str, f: Flags) -> Option<bool> {
    let m = mask(f.width);
    let (a, b) = (f.a & m, f.b & m);
    let (sa, sb) = (sign_extend(a, f.width), sign_extend(b, f.width));
    let diff = sign_extend(a.wrapping_sub(b) & m, f.width);
    Some(match cc {
        "a" | "nbe" => a > b,
        "ae" | "nb" | "nc" => a >= b,
        "b" | "c" | "nae" => a < b,
        "be" | "na" => a <= b,
        "e" | "z" => a == b,
        "ne" | "nz" => a != b,
        "g" | "nle" => sa > sb,
        "ge" | "nl" => sa >= sb,
        "l" | "nge" => sa < sb,
        "le" | "ng" => sa <= sb,
        "s" => diff < 0,
        "ns" => diff >= 0,
        _ => return None,
    })
}

/// Whether `cc` holds given only how x relates to y.
fn holds_related(cc: &str, rel: u8) -> Option<bool> {
    let (eq, ult, slt) = (rel & 1 != 0, rel & 2 != 0, rel & 4 != 0);
    Some(match cc {
        "a" | "nbe" => !eq && !ult,
        "ae" | "nb" | "nc" => !ult,
        "b" | "c" | "nae" => ult,
        "be" | "na" => ult || eq,
        "e" | "z" => eq,
        "ne" | "nz" => !eq,
        "g" | "nle" => !eq && !slt,
        "ge" | "nl" => !slt,
        "l" | "nge" => slt,
        "le" | "ng" => slt || eq,
        _ => return None,
    })
}

/// Whether `cc` holds for every x that relates to `c` as `rel` says, when
/// x is compared with `with` — or `None` if that depends on x.
fn holds_bounded(cc: &str, rel: u8, c: u64, with: u64, width: u32) -> Option<bool> {
    let m = mask(width);
    let c = c & m;
    if rel & 1 != 0 {
        return holds(
            cc,
            Flags {
                a: c,
                b: with,
                width,
            },
        );
    }
    // The interval x lies in, unsigned and signed (as raw bits at width).
    let smin = (1u64 << (width - 1)) & m;
    let smax = smin.wrapping_sub(1) & m;
    let unsigned = if rel & 2 != 0 {
        (c != 0).then(|| (0, c.wrapping_sub(1) & m))
    } else {
        (c != m).then(|| (c + 1, m))
    }?;
    let signed = if rel & 4 != 0 {
        (c != smin).then(|| (smin, c.wrapping_sub(1) & m))
    } else {
        (c != smax).then(|| (c.wrapping_add(1) & m, smax))
    }?;
    let ends = |(lo, hi): (u64, u64)| {
        let at = |x| {
            holds(
                cc,
                Flags {
                    a: x,
                    b: with,
                    width,
                },
            )
        };
        let (l, h) = (at(lo)?, at(hi)?);
        (l == h).then_some(l)
    };
    let inside_u = (unsigned.0..=unsigned.1).contains(&(with & m));
    let (ws, slo, shi) = (
        sign_extend(with, width),
        sign_extend(signed.0, width),
        sign_extend(signed.1, width),
    );
    match cc {
        "a" | "nbe" | "ae" | "nb" | "nc" | "b" | "c" | "nae" | "be" | "na" => ends(unsigned),
        "g" | "nle" | "ge" | "nl" | "l" | "nge" | "le" | "ng" => ends(signed),
        "e" | "z" | "ne" | "nz" => {
            let outside = !inside_u || !(slo..=shi).contains(&ws);
            outside.then_some(cc.contains('n'))
        }
        _ => None,
    }
}

/// Comparison callbacks by entry address: the width they compare at (0 for
/// floating point, whose branches are not decided).
fn comparison_hooks(code: &Code) -> FxHashMap<u64, u32> {
    code.functions
        .iter()
        .filter_map(|f| {
            let w = match f.name.strip_prefix("__sanitizer_cov_trace_")? {
                "cmp1" | "const_cmp1" => 8,
                "cmp2" | "const_cmp2" => 16,
                "cmp4" | "const_cmp4" => 32,
                "cmp8" | "const_cmp8" => 64,
                "cmpf" | "cmpd" => 0,
                _ => return None,
            };
            Some((f.entry, w))
        })
        .collect()
}

/// The forward run of one block's code.
struct Walk {
    regs: [Reg; 16],
    slots: FxHashMap<u64, Reg>,
    known: FxHashMap<u32, Known>,
    /// Value numbers made by a zero or sign extension: (source, its width).
    extended: FxHashMap<u32, (u32, u32)>,
    next: u32,
}

impl Walk {
    fn fresh(&mut self, bits: u32) -> Reg {
        self.next += 1;
        Reg {
            id: self.next,
            bits,
        }
    }

    fn constant(&mut self, v: u64, width: u32) -> Reg {
        let r = self.fresh(width);
        self.known.insert(
            r.id,
            Known {
                value: v & mask(width),
                bits: width,
            },
        );
        r
    }

    /// The content of a register or stack-slot operand read at `width`.
    fn read(&mut self, op: &str, width: u32) -> Option<Reg> {
        if let Some((r, w)) = register(op) {
            let reg = self.regs[r as usize];
            return (reg.bits >= w).then_some(Reg {
                id: reg.id,
                bits: w,
            });
        }
        let (r, d) = displaced(op)?;
        if r != 4 {
            return None;
        }
        match self.slots.get(&d) {
            Some(s) if s.bits >= width => Some(Reg {
                id: s.id,
                bits: width,
            }),
            _ => {
                // First read of this slot here: give it a number, so a
                // later load of the same slot is the same value.
                let s = self.fresh(width);
                self.slots.insert(d, s);
                Some(s)
            }
        }
    }

    fn value(&self, reg: Reg) -> Option<u64> {
        let k = self.known.get(&reg.id)?;
        (k.bits >= reg.bits).then_some(k.value & mask(reg.bits))
    }

    /// `id` (and what it extends) is `v` in its low `bits` bits.
    fn learn(&mut self, id: u32, v: u64, bits: u32) {
        self.known.insert(
            id,
            Known {
                value: v & mask(bits),
                bits,
            },
        );
        if let Some(&(src, w)) = self.extended.get(&id) {
            self.learn(src, v, w.min(bits));
        }
    }

    /// The value numbers that equal `reg` at `width` bits.
    fn aliases(&self, reg: Reg, width: u32) -> Vec<u32> {
        if reg.bits < width {
            return Vec::new();
        }
        let mut out = vec![reg.id];
        if let Some(&(src, w)) = self.extended.get(&reg.id) {
            if w >= width {
                out.push(src);
            }
        }
        out
    }
}

/// The branches whose way the pair's evidence fixes, as (instruction
/// index, index of the instruction it goes to), for a pair that leaves the
/// block of `site`. The code is run forward from the site over moves,
/// extensions, constant arithmetic, stack slots, the callbacks and
/// compares; the first branch it cannot decide ends the run.
pub fn decide(code: &Code, site: u64, ev: Evidence) -> FxHashMap<usize, usize> {
    let mut forced = FxHashMap::default();
    if ev == Evidence::default() || code.text.len() != code.insns.len() {
        return forced;
    }
    let Some(&start) = code.at.get(&site) else {
        return forced;
    };
    let hooks = comparison_hooks(code);
    let (count, history) = ev.relations.map_or((0, 0), |r| (r & 7, r >> 3));
    let relation = |k: u16| {
        (count < 7 && k <= count && count - k < 4)
            .then(|| ((history >> (3 * (count - k))) & 7) as u8)
    };
    let mut walk = Walk {
        regs: [Reg { id: 0, bits: 0 }; 16],
        slots: FxHashMap::default(),
        known: FxHashMap::default(),
        extended: FxHashMap::default(),
        next: 0,
    };
    for r in 0..16 {
        walk.regs[r] = walk.fresh(64);
    }
    let func = code.insns[start].func;
    let mut state: Option<State> = None;
    let mut fact: Option<Fact> = None;
    let mut calls = 0u16;
    let mut index: Option<u64> = None;
    let mut i = start;
    for _ in 0..128 {
        let insn = code.insns[i];
        if insn.func != func {
            break;
        }
        let (m, text) = (&*code.text[i].0, &*code.text[i].1);
        let ops = operands(text);
        let next = code.at.get(&insn.next).copied();
        match insn.flow {
            Flow::Call(t) if Some(t) == code.callback => break,
            Flow::Call(t) => {
                let (a, b) = (walk.regs[7], walk.regs[6]);
                if Some(t) == code.switch_hook {
                    if let Some(v) = ev.value {
                        walk.learn(a.id, v, a.bits);
                    }
                } else if let Some(&width) = hooks.get(&t) {
                    calls += 1;
                    fact = relation(calls).filter(|_| width > 0).map(|rel| Fact {
                        a: walk.aliases(a, width),
                        b: walk.aliases(b, width),
                        a_value: walk.value(Reg {
                            id: a.id,
                            bits: width,
                        }),
                        b_value: walk.value(Reg {
                            id: b.id,
                            bits: width,
                        }),
                        width,
                        rel,
                    });
                }
                for r in CALLER_SAVED {
                    walk.regs[r as usize] = walk.fresh(64);
                }
                state = None;
                let Some(n) = next else { break };
                i = n;
                continue;
            }
            Flow::CallIndirect => break,
            Flow::Cond(t) => {
                let Some(cc) = m.strip_prefix('j') else { break };
                let taken = match state {
                    Some(State::Concrete(f)) => holds(cc, f),
                    Some(State::Related(rel)) => holds_related(cc, rel),
                    Some(State::Bounded {
                        rel,
                        c,
                        with,
                        width,
                    }) => holds_bounded(cc, rel, c, with, width),
                    None => None,
                };
                let Some(taken) = taken else { break };
                let to = if taken {
                    code.at.get(&t).copied()
                } else {
                    next
                };
                let Some(to) = to else { break };
                // Back at a branch already decided the other way (a loop
                // in code without coverage): the value cannot say more.
                if forced.insert(i, to).is_some_and(|old| old != to) {
                    forced.remove(&i);
                    break;
                }
                i = to;
                continue;
            }
            Flow::Jump(t) => {
                match code.at.get(&t) {
                    Some(&n) if code.insns[n].func == func => i = n,
                    _ => break,
                }
                continue;
            }
            Flow::JumpIndirect => {
                let idx = match ops.first().and_then(|o| o.strip_prefix('*')) {
                    Some(o) if o.contains("(,") => table_index(o).and_then(|r| {
                        let reg = walk.regs[r as usize];
                        walk.value(Reg {
                            id: reg.id,
                            bits: 64.min(reg.bits),
                        })
                    }),
                    _ => index,
                };
                let to = idx
                    .and_then(|k| code.table_entries.get(&insn.addr)?.get(k as usize).copied())
                    .and_then(|t| code.at.get(&t).copied());
                if let Some(to) = to {
                    forced.insert(i, to);
                }
                break;
            }
            Flow::Ret | Flow::Stop => break,
            Flow::Next => {}
        }
        step(&mut walk, m, &ops, &mut state, fact.as_ref(), &mut index);
        match next {
            Some(n) => i = n,
            None => break,
        }
    }
    forced
}

/// One straight-line instruction: what it does to registers, stack slots
/// and flags.
fn step(
    walk: &mut Walk,
    m: &str,
    ops: &[&str],
    state: &mut Option<State>,
    fact: Option<&Fact>,
    index: &mut Option<u64>,
) {
    let dst = ops.last().and_then(|d| register(d));
    let src = ops.first().copied().unwrap_or("");
    let keeps_flags = m.starts_with("mov") || m == "lea" || m.starts_with("nop");
    // A jump-table load indexed by a known register (`movslq
    // (%base,%idx,4),%r`): the jump through %r takes that entry.
    if m.starts_with("mov") && src.contains(',') && src.ends_with(')') {
        if let Some(r) = table_index(src) {
            let reg = walk.regs[r as usize];
            *index = walk.value(reg);
        }
    }
    if matches!(m, "push" | "pop") || dst.is_some_and(|d| d.0 == 4) {
        walk.slots.clear();
    }
    let mut flags: Option<State> = None;
    let result: Option<Reg> = match (m, ops.len()) {
        ("cmp", 2) | ("test", 2) => {
            let width = dst.map_or(64, |d| d.1);
            let x = walk.read(ops[1], width);
            let y = if m == "test" {
                (ops[0] == ops[1]).then(|| walk.constant(0, width))
            } else {
                match immediate(src) {
                    Some(k) => Some(walk.constant(k, width)),
                    None => walk.read(src, width),
                }
            };
            if let (Some(x), Some(y)) = (x, y) {
                flags = compare(walk, x, y, width, fact);
            }
            *state = flags;
            return;
        }
        ("xor", 2) if ops[0] == ops[1] => dst.map(|(_, w)| walk.constant(0, w)),
        (m, 2) if m.starts_with("mov") && dst.is_some() => {
            let (_, dw) = dst.expect("checked");
            let ext = &m[3..];
            let signed = matches!(ext, "sbw" | "sbl" | "sbq" | "swl" | "swq" | "slq");
            let zero = matches!(ext, "zbw" | "zbl" | "zbq" | "zwl" | "zwq");
            let sw = register(src).map_or(dw, |r| r.1);
            let sw = if signed || zero {
                match ext.as_bytes()[1] {
                    b'b' => 8,
                    b'w' => 16,
                    _ => 32,
                }
            } else {
                sw
            };
            if let Some(k) = immediate(src) {
                Some(walk.constant(k, dw))
            } else if let Some(s) = walk.read(src, sw) {
                if signed || zero {
                    let r = walk.fresh(if dw >= 32 { 64 } else { dw });
                    walk.extended.insert(r.id, (s.id, sw));
                    if let Some(v) = walk.value(s) {
                        let v = if signed { sign_extend(v, sw) as u64 } else { v };
                        walk.learn(r.id, v, r.bits);
                    }
                    Some(r)
                } else {
                    Some(s)
                }
            } else {
                None
            }
        }
        ("mov", 2) => {
            // A store: into a stack slot it is tracked, elsewhere ignored.
            if let (Some((r, w)), Some((4, d))) = (register(src), displaced(ops[1])) {
                let reg = walk.regs[r as usize];
                walk.slots.insert(
                    d,
                    Reg {
                        id: reg.id,
                        bits: reg.bits.min(w),
                    },
                );
            }
            None
        }
        ("lea", 2) => match (displaced(src), dst) {
            (Some((r, d)), Some((_, dw))) => {
                let reg = walk.regs[r as usize];
                let out = walk.fresh(if dw >= 32 { 64 } else { dw });
                if let Some(k) = walk.known.get(&reg.id).copied() {
                    let bits = k.bits.min(reg.bits).min(dw);
                    walk.learn(out.id, k.value.wrapping_add(d), bits);
                }
                Some(out)
            }
            _ => None,
        },
        ("sub" | "add" | "and", 2) => match (immediate(src), dst) {
            (Some(k), Some((_, w))) => {
                let before = walk.read(ops[1], w).and_then(|r| walk.value(r));
                let out = walk.fresh(if w >= 32 { 64 } else { w });
                if let Some(a) = before {
                    let v = match m {
                        "sub" => a.wrapping_sub(k),
                        "add" => a.wrapping_add(k),
                        _ => a & k,
                    } & mask(w);
                    walk.learn(out.id, v, w);
                    flags = match m {
                        "sub" => Some(State::Concrete(Flags { a, b: k, width: w })),
                        "and" => Some(State::Concrete(Flags {
                            a: v,
                            b: 0,
                            width: w,
                        })),
                        _ => None,
                    };
                }
                Some(out)
            }
            _ => None,
        },
        _ => None,
    };
    // A store to a stack slot other than of a register: forget the slot.
    if let Some((4, d)) = ops.last().and_then(|o| displaced(o)) {
        let tracked = m == "mov" && register(src).is_some();
        if !tracked {
            walk.slots.remove(&d);
        }
    }
    // Instructions that write registers their operands do not name (the
    // quotient and remainder of `div`, sign extensions into %rdx, string
    // instructions), or both operands (`xchg`): forget all they may touch.
    const IMPLICIT: &[&str] = &[
        "div", "idiv", "mul", "imul", "cqto", "cltd", "cltq", "cwtl", "cwtd", "cbtw", "cqo", "cdq",
        "cdqe", "xchg", "xadd", "cmpxchg", "rdtsc", "rdtscp", "cpuid", "syscall", "rep", "repz",
        "repnz", "movs", "stos", "lods", "scas", "cmps", "mulx", "lock",
    ];
    let base = m.strip_suffix(['b', 'w', 'l', 'q']).unwrap_or(m);
    if IMPLICIT.contains(&m) || IMPLICIT.contains(&base) || m.starts_with("rep") {
        for r in [0u8, 1, 2, 6, 7] {
            walk.regs[r as usize] = walk.fresh(64);
        }
        for op in ops {
            if let Some((r, _)) = register(op) {
                walk.regs[r as usize] = walk.fresh(64);
            }
        }
        *state = None;
        return;
    }
    if let Some((r, w)) = dst {
        walk.regs[r as usize] = match result {
            Some(reg) => Reg {
                id: reg.id,
                bits: reg.bits.min(if w >= 32 && reg.bits >= 32 { 64 } else { w }),
            },
            None => walk.fresh(64),
        };
    }
    if !keeps_flags {
        *state = flags;
    }
}

/// The flags of `cmp y,x` at `width` bits.
fn compare(walk: &Walk, x: Reg, y: Reg, width: u32, fact: Option<&Fact>) -> Option<State> {
    if let (Some(a), Some(b)) = (walk.value(x), walk.value(y)) {
        return Some(State::Concrete(Flags { a, b, width }));
    }
    let f = fact.filter(|f| f.width == width)?;
    let (xa, xb) = (f.a.contains(&x.id), f.b.contains(&x.id));
    let (ya, yb) = (f.a.contains(&y.id), f.b.contains(&y.id));
    let yv = walk.value(y);
    if xa && yb {
        Some(State::Related(f.rel))
    } else if xb && ya {
        Some(State::Related(swapped(f.rel)))
    } else if let (true, Some(c), Some(with)) = (xa, f.b_value, yv) {
        Some(State::Bounded {
            rel: f.rel,
            c,
            with,
            width,
        })
    } else if let (true, Some(c), Some(with)) = (xb, f.a_value, yv) {
        Some(State::Bounded {
            rel: swapped(f.rel),
            c,
            with,
            width,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gcc 12's lowering of an `if` chain over a character (the range check,
    /// then a position-independent jump table).
    fn lexer() -> Code {
        let text = "\
0000000000001000 <next>:
    1000:\tcall   2000 <__sanitizer_cov_trace_pc>
    1005:\tmovsbq %r12b,%rdi
    1009:\tlea    0x100(%rip),%rsi        # 3000 <t>
    1010:\tcall   2100 <__sanitizer_cov_trace_switch>
    1015:\tcmp    $0x3e,%r12b
    1019:\tja     1040 <next+0x40>
    101b:\tlea    0x200(%rip),%rdx        # 3100 <t>
    1022:\tmovzbl %r12b,%eax
    1026:\tmovslq (%rdx,%rax,4),%rax
    102a:\tadd    %rdx,%rax
    102d:\tjmp    *%rax
    1030:\tcall   2000 <__sanitizer_cov_trace_pc>
    1035:\tret
    1040:\tcall   2000 <__sanitizer_cov_trace_pc>
    1045:\tret
0000000000002000 <__sanitizer_cov_trace_pc>:
    2000:\tret
0000000000002100 <__sanitizer_cov_trace_switch>:
    2100:\tret
";
        let mut code = Code::parse(text);
        // Table entries 0..0x3f: entry 0x2b ('+') goes to 1030, the rest to
        // the default 1040.
        let entries = (0..0x3fu64)
            .map(|k| if k == 0x2b { 0x1030 } else { 0x1040 })
            .collect();
        code.table_entries.insert(0x102d, entries);
        code.tables.insert(0x102d, vec![0x1030, 0x1040]);
        code
    }

    fn value(v: u64) -> Evidence {
        Evidence {
            value: Some(v),
            relations: None,
        }
    }

    #[test]
    fn the_value_picks_the_range_check_or_the_table_entry() {
        let code = lexer();
        let at = |a: u64| code.at[&a];
        // '^' (0x5e) is above the range: the range check is taken.
        let f = decide(&code, 0x1005, value(0x5e));
        assert_eq!(f.get(&at(0x1019)), Some(&at(0x1040)));
        assert!(!f.contains_key(&at(0x102d)));
        // '+' (0x2b): the check falls through, the table sends it to 1030.
        let f = decide(&code, 0x1005, value(0x2b));
        assert_eq!(f.get(&at(0x1019)), Some(&at(0x101b)));
        assert_eq!(f.get(&at(0x102d)), Some(&at(0x1030)));
        // ' ' in range but not a case: the table's default entry.
        let f = decide(&code, 0x1005, value(0x20));
        assert_eq!(f.get(&at(0x102d)), Some(&at(0x1040)));
        // A negative char sign-extended to 64 bits: above 0x3e unsigned.
        let f = decide(&code, 0x1005, value((-3i64) as u64));
        assert_eq!(f.get(&at(0x1019)), Some(&at(0x1040)));
        // No switch call in the block of another site: nothing decided.
        assert!(decide(&code, 0x1035, value(0x2b)).is_empty());
    }

    #[test]
    fn condition_codes_and_registers() {
        let f = |a, b, width| Flags { a, b, width };
        assert_eq!(holds("a", f(0x5e, 0x3e, 8)), Some(true));
        assert_eq!(holds("a", f(0xfd, 0x3e, 8)), Some(true));
        assert_eq!(holds("g", f(0xfd, 0x3e, 8)), Some(false));
        assert_eq!(holds("le", f(0x24, 0x24, 32)), Some(true));
        assert_eq!(holds("o", f(1, 2, 32)), None);
        assert_eq!(register("%r12b"), Some((12, 8)));
        assert_eq!(register("%esi"), Some((6, 32)));
        assert_eq!(register("%rip"), None);
        assert_eq!(
            operands("(%rdx,%rax,4),%rax"),
            vec!["(%rdx,%rax,4)", "%rax"]
        );
        assert_eq!(displaced("-0x30(%r14)"), Some((14, (-0x30i64) as u64)));
        assert_eq!(immediate("$-0x1"), Some(u64::MAX));
    }
}
