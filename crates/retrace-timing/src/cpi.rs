//! CPI stacks: why the cycles go. [`Pipeline::issue`](crate::Pipeline::issue)
//! advances the issue clock by a sum of terms — one cycle to issue, the
//! occupancy beyond it, the wait for an operand, a cache miss, a control
//! penalty — and the accounting form of the rule
//! ([`Pipeline::issue_accounting`](crate::Pipeline::issue_accounting)) adds
//! each term to its [`CpiPart`] as it adds it to the clock. The parts of a
//! stack therefore sum to the cycles exactly, by construction, and the
//! cycle-level engine and the replay, which share the rule, split the same
//! cycles the same way.

use retrace_isa::{Class, Inst};

/// One reason a cycle went. The order is the order of [`CpiPart::ALL`],
/// of a [`CpiStack`]'s counters and of every table that prints one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CpiPart {
    /// One cycle for every instruction issued.
    #[default]
    Base,
    /// Occupancy beyond one cycle of multiplications.
    Mul,
    /// Occupancy beyond one cycle of divisions and remainders.
    Div,
    /// Occupancy beyond one cycle of loads, stores and atomics.
    Mem,
    /// Occupancy beyond one cycle of every other instruction.
    MultiCycle,
    /// Floating point: occupancy beyond one cycle of FP operations (not
    /// FP loads and stores, which are `Mem`), waiting for an FP register's
    /// value (an FP load's too), and waiting for the FP divider.
    Fp,
    /// Waiting for an operand last written by a load.
    LoadUse,
    /// Waiting for any other operand still being computed.
    Interlock,
    /// Data-cache miss stalls.
    DCache,
    /// Mispredicted conditional branches and returns.
    Mispredict,
    /// Penalties of taken branches, jumps, calls and returns.
    Taken,
    /// Extra fetches of instructions that span two fetch words.
    Fetch,
    /// Instruction-cache miss stalls.
    ICache,
    /// Entering trap handlers: the pipeline drains, then the trap penalty.
    Trap,
}

/// Number of parts in a stack.
pub const CPI_PARTS: usize = 14;

impl CpiPart {
    /// Every part, in stack order.
    pub const ALL: [CpiPart; CPI_PARTS] = [
        CpiPart::Base,
        CpiPart::Mul,
        CpiPart::Div,
        CpiPart::Mem,
        CpiPart::MultiCycle,
        CpiPart::Fp,
        CpiPart::LoadUse,
        CpiPart::Interlock,
        CpiPart::DCache,
        CpiPart::Mispredict,
        CpiPart::Taken,
        CpiPart::Fetch,
        CpiPart::ICache,
        CpiPart::Trap,
    ];

    /// The part's name in tables, CSV headers and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            CpiPart::Base => "base",
            CpiPart::Mul => "mul",
            CpiPart::Div => "div",
            CpiPart::Mem => "mem",
            CpiPart::MultiCycle => "multicycle",
            CpiPart::Fp => "fp",
            CpiPart::LoadUse => "load_use",
            CpiPart::Interlock => "interlock",
            CpiPart::DCache => "dcache",
            CpiPart::Mispredict => "mispredict",
            CpiPart::Taken => "taken",
            CpiPart::Fetch => "fetch",
            CpiPart::ICache => "icache",
            CpiPart::Trap => "trap",
        }
    }

    /// The part whose cycles an instruction of `class` spends holding the
    /// issue stage beyond its first cycle.
    pub(crate) fn occupancy_of(class: Class) -> CpiPart {
        match class {
            Class::Mul | Class::MulH => CpiPart::Mul,
            Class::Div | Class::DivW => CpiPart::Div,
            Class::LoadByte
            | Class::LoadHalf
            | Class::LoadWord
            | Class::LoadDouble
            | Class::Store
            | Class::Amo
            | Class::FpLoad
            | Class::FpStore => CpiPart::Mem,
            c if c.is_fp() => CpiPart::Fp,
            _ => CpiPart::MultiCycle,
        }
    }
}

/// Cycles per [`CpiPart`]; the parts sum to the cycles they explain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpiStack(pub [u64; CPI_PARTS]);

impl CpiStack {
    /// The cycles of one part.
    pub fn get(&self, part: CpiPart) -> u64 {
        self.0[part as usize]
    }

    /// Add `cycles` to one part.
    #[inline(always)]
    pub fn charge(&mut self, part: CpiPart, cycles: u64) {
        self.0[part as usize] += cycles;
    }

    /// The sum of the parts.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Add `other`, `times` times.
    pub fn add_times(&mut self, other: &CpiStack, times: u64) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b * times;
        }
    }

    /// Add `other`.
    pub fn add(&mut self, other: &CpiStack) {
        self.add_times(other, 1);
    }

    /// The parts of `self` less those of `earlier` (a stack that has only
    /// grown since).
    pub fn since(&self, earlier: &CpiStack) -> CpiStack {
        let mut d = *self;
        for (a, b) in d.0.iter_mut().zip(earlier.0) {
            *a = a.saturating_sub(b);
        }
        d
    }

    /// `(part, cycles)` in stack order.
    pub fn parts(&self) -> impl Iterator<Item = (CpiPart, u64)> + '_ {
        CpiPart::ALL.iter().map(|&p| (p, self.get(p)))
    }

    /// The part names, comma-separated: a CSV header's columns.
    pub fn csv_header() -> String {
        CpiPart::ALL.map(CpiPart::name).join(",")
    }

    /// The cycles, comma-separated in the order of [`CpiStack::csv_header`].
    pub fn csv_row(&self) -> String {
        self.0.map(|c| c.to_string()).join(",")
    }

    /// A JSON object, `{"base": …, …}` in stack order.
    pub fn json(&self) -> String {
        let fields: Vec<String> = self
            .parts()
            .map(|(p, c)| format!("\"{}\": {c}", p.name()))
            .collect();
        format!("{{{}}}", fields.join(", "))
    }
}

/// A stack serialises as a map from part name to cycles, in stack order.
impl serde::Serialize for CpiStack {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(CPI_PARTS))?;
        for (p, c) in self.parts() {
            m.serialize_entry(p.name(), &c)?;
        }
        m.end()
    }
}

/// What the accounting form of the timing rule keeps besides the stack:
/// which registers were last written by a load, so that a wait for one of
/// them is told apart as load-use. It does not change the timing, so it is
/// no part of a [`crate::Signature`]; the replay carries it across partial
/// programs itself ([`CpiAccount::with_loaded`], [`loaded_after`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpiAccount {
    /// The cycles so far, by part.
    pub stack: CpiStack,
    /// Bit `r`: register `r` was last written by a load.
    loaded: u32,
}

impl CpiAccount {
    /// An empty account whose registers in `loaded` (bit per register) were
    /// last written by loads.
    pub fn with_loaded(loaded: u32) -> CpiAccount {
        CpiAccount {
            stack: CpiStack::default(),
            loaded,
        }
    }

    /// Which registers were last written by a load (bit per register).
    pub fn loaded(&self) -> u32 {
        self.loaded
    }

    /// Note that register `rd` (not x0) was written, by a load or not.
    #[inline(always)]
    pub(crate) fn wrote(&mut self, rd: u8, load: bool) {
        let bit = 1u32 << (rd & 31);
        if load {
            self.loaded |= bit;
        } else {
            self.loaded &= !bit;
        }
    }

    /// Whether register `r` was last written by a load.
    #[inline(always)]
    pub(crate) fn is_loaded(&self, r: u8) -> bool {
        self.loaded >> (r & 31) & 1 != 0
    }
}

/// The registers last written by a load after `insts` run, starting from
/// `loaded` (bit per register): the same bookkeeping as the accounting
/// rule's, for a replay that steps over a path without timing it.
pub fn loaded_after<'a>(loaded: u32, insts: impl IntoIterator<Item = &'a Inst>) -> u32 {
    let mut a = CpiAccount::with_loaded(loaded);
    for inst in insts {
        if let Some(rd) = inst.writes() {
            a.wrote(rd, writes_from_memory(inst));
        }
    }
    a.loaded
}

/// Whether `inst`'s result comes from memory: a load, `lr`, an atomic.
pub(crate) fn writes_from_memory(inst: &Inst) -> bool {
    inst.mem().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_in_order() {
        let names: Vec<_> = CpiPart::ALL.iter().map(|p| p.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), CPI_PARTS);
        for (i, p) in CpiPart::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
        let mut s = CpiStack::default();
        s.charge(CpiPart::LoadUse, 3);
        s.charge(CpiPart::Base, 2);
        assert_eq!(s.total(), 5);
        assert!(
            s.json().starts_with("{\"base\": 2, \"mul\": 0"),
            "{}",
            s.json()
        );
        assert_eq!(CpiStack::csv_header().split(',').count(), CPI_PARTS);
        assert_eq!(s.csv_row().split(',').nth(6), Some("3"));
    }
}
