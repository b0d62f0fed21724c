//! Names for addresses and the ranges of functions, as reports and the
//! cycle-level engine's per-function attribution need them.
//!
//! Both prefer what the analysis found (functions recovered in stripped
//! code, sizes from the CFG) and fall back on the ELF's symbols, so that a
//! report names every address it can.

use crate::{Addr, Elf, Program};

/// Symbolic names for addresses: `function+0x10` by the analysed
/// functions, else by the nearest ELF symbol, else the bare address.
pub struct Names<'a> {
    program: &'a Program,
    elf: &'a Elf,
}

impl<'a> Names<'a> {
    /// Names from `program`'s functions and `elf`'s symbols.
    pub fn new(program: &'a Program, elf: &'a Elf) -> Self {
        Names { program, elf }
    }

    /// `sym+0x10`, or the bare address.
    pub fn at(&self, a: Addr) -> String {
        if let Some(f) = self.program.function_containing(a) {
            let func = self.program.function(f);
            let off = a.0 - func.entry.0;
            return if off == 0 {
                func.name.clone()
            } else {
                format!("{}+{:#x}", func.name, off)
            };
        }
        self.elf.describe(a.0).unwrap_or_else(|| a.to_string())
    }
}

/// The functions of a program as address ranges, sorted by entry, none
/// overlapping another's entry: what cycles are attributed to.
#[derive(Clone, Debug, Default)]
pub struct FunctionRanges {
    /// Names, in entry order.
    pub names: Vec<String>,
    /// `(entry, size)` of each, in entry order.
    pub ranges: Vec<(u64, u64)>,
}

impl FunctionRanges {
    /// The program's functions as the analysis finds them; when the
    /// analysis fails (it should not stop a run), the ELF's function
    /// symbols. A function of unknown size extends to the next function's
    /// entry (the last one to 4 bytes).
    pub fn of(elf: &Elf) -> FunctionRanges {
        match Program::analyse(elf) {
            Ok(p) => FunctionRanges::of_program(&p),
            Err(_) => FunctionRanges::of_list(
                elf.symbols
                    .iter()
                    .filter(|s| s.is_function)
                    .map(|s| (s.addr, s.size, s.name.clone()))
                    .collect(),
            ),
        }
    }

    /// The analysed program's functions, as [`FunctionRanges::of`] gives
    /// them (the replay's profile attributes to the same ranges as the
    /// cycle-level engine).
    pub fn of_program(program: &Program) -> FunctionRanges {
        FunctionRanges::of_list(
            program
                .functions
                .iter()
                .map(|f| (f.entry.0, f.size.unwrap_or(0), f.name.clone()))
                .collect(),
        )
    }

    fn of_list(mut list: Vec<(u64, u64, String)>) -> FunctionRanges {
        list.sort_by_key(|f| f.0);
        list.dedup_by_key(|f| f.0);
        let entries: Vec<u64> = list.iter().map(|f| f.0).collect();
        let mut out = FunctionRanges {
            names: Vec::with_capacity(list.len()),
            ranges: Vec::with_capacity(list.len()),
        };
        for (i, (entry, size, name)) in list.into_iter().enumerate() {
            let size = match (size, entries.get(i + 1)) {
                (0, Some(next)) => next - entry,
                (0, None) => 4,
                (s, _) => s,
            };
            out.names.push(name);
            out.ranges.push((entry, size));
        }
        out
    }
}
