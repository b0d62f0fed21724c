//! The whole-program analysis: functions, the partial-program table, jump
//! tables and one CFG per function.
//!
//! Functions come from `STT_FUNC` symbols (with their sizes) and, so that a
//! stripped file works too, from the ELF entry point and every direct call
//! target that the partial-program table's recursive descent reaches.
//! Building the table *is* the recursive descent: every start point's path
//! is followed and its successors become start points, so the table
//! covers every instruction statically reachable from any function entry.
//! Plain jump tables add their targets; the process repeats until nothing
//! new is found.

use crate::callgraph::CallGraph;
use crate::cfg::{self, Cfg, Scope};
use crate::code::Code;
use crate::error::{ProgramError, Warning};
use crate::jumptable::{self, JumpTable};
use crate::loops::{self, LoopNest};
use crate::pp::{End, PpId, PpTable, StartKind};
use crate::regions::{self, Region};
use crate::{Addr, Elf, Symbol};
use retrace_isa::Xlen;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Index of a function in [`Program::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FuncId(pub u32);

impl FuncId {
    /// The index into [`Program::functions`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for FuncId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a function was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionSource {
    /// An `STT_FUNC` symbol.
    Symbol,
    /// The ELF entry point (without a symbol).
    Entry,
    /// The target of a direct call (without a symbol).
    CallTarget,
}

/// One function.
#[derive(Clone, Debug)]
pub struct Function {
    /// Its name: the symbol's (a global one among aliases), or
    /// `fn_<address>` when it has no symbol.
    pub name: String,
    /// Other symbols at the same address.
    pub aliases: Vec<String>,
    /// Entry address.
    pub entry: Addr,
    /// Size from the symbol table, `None` when unknown.
    pub size: Option<u64>,
    /// How it was found.
    pub source: FunctionSource,
}

/// The analysed program. See the module docs.
#[derive(Clone, Debug)]
pub struct Program {
    /// Register width.
    pub xlen: Xlen,
    /// The ELF entry point.
    pub entry: Addr,
    /// The partial-program table.
    pub table: PpTable,
    /// Functions, sorted by entry address.
    pub functions: Vec<Function>,
    /// One CFG per function, indexed like [`Program::functions`].
    pub cfgs: Vec<Cfg>,
    /// Recognised jump tables, by site address.
    pub jump_tables: Vec<JumpTable>,
    /// The call graph.
    pub call_graph: CallGraph,
    /// Everything odd that was worked around, in the order found.
    pub warnings: Vec<Warning>,
    by_entry: HashMap<Addr, FuncId>,
}

impl Program {
    /// Analyses an ELF executable.
    pub fn analyse(elf: &Elf) -> Result<Program, ProgramError> {
        let code = Code::from_elf(elf)?;
        Program::from_code(code, Addr(elf.entry), &elf.symbols)
    }

    /// Analyses code with an entry point and a symbol table (any symbols;
    /// only functions are used).
    pub fn from_code(code: Code, entry: Addr, symbols: &[Symbol]) -> Result<Program, ProgramError> {
        let xlen = code.xlen();
        let mut warnings = Vec::new();
        let mut functions = symbol_functions(&code, symbols, &mut warnings);
        let mut table = PpTable::new(code);
        // The entry point must be executable: without it there is no
        // program to partition.
        table.add_start(entry, StartKind::FunctionEntry)?;
        for f in &functions {
            if let Err(error) = table.add_start(f.entry, StartKind::FunctionEntry) {
                warnings.push(Warning::BadTarget {
                    from: f.entry,
                    to: f.entry,
                    error,
                });
            }
        }
        let mut known: HashSet<Addr> = functions.iter().map(|f| f.entry).collect();
        if known.insert(entry) {
            functions.push(Function {
                name: format!("fn_{:x}", entry.0),
                aliases: Vec::new(),
                entry,
                size: None,
                source: FunctionSource::Entry,
            });
        }

        // Jump tables and call targets until nothing new appears.
        let mut jump_tables: Vec<JumpTable> = Vec::new();
        let mut tried: HashSet<PpId> = HashSet::new();
        loop {
            let preds = jumptable::Preds::of(&table);
            let candidates: Vec<PpId> = table
                .iter()
                .filter(|(id, p)| p.end == End::IndirectJump && !tried.contains(id))
                .map(|(id, _)| id)
                .collect();
            let mut found = Vec::new();
            for id in candidates {
                tried.insert(id);
                if let Some(jt) = jumptable::recognise(&table, id, &preds) {
                    if !jump_tables.iter().any(|j| j.site == jt.site) {
                        found.push(jt);
                    }
                }
            }
            let mut grew = false;
            for jt in found {
                for &t in &jt.targets {
                    match table.add_start(t, StartKind::Indirect) {
                        Ok(_) => grew = true,
                        Err(error) => table_warn(&mut warnings, jt.site, t, error),
                    }
                }
                jump_tables.push(jt);
            }
            for (_, p) in table.iter() {
                if let End::Call {
                    target: Some(t), ..
                } = p.end
                {
                    let at = table.get(t).start;
                    if known.insert(at) {
                        functions.push(Function {
                            name: format!("fn_{:x}", at.0),
                            aliases: Vec::new(),
                            entry: at,
                            size: None,
                            source: FunctionSource::CallTarget,
                        });
                    }
                }
            }
            if !grew {
                break;
            }
        }
        table.seal();
        functions.sort_by_key(|f| f.entry);
        jump_tables.sort_by_key(|j| j.site);
        let by_entry: HashMap<Addr, FuncId> = functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.entry, FuncId(i as u32)))
            .collect();

        let tables: HashMap<Addr, Vec<Addr>> = jump_tables
            .iter()
            .map(|j| (j.site, j.targets.clone()))
            .collect();
        let mut cfgs = Vec::with_capacity(functions.len());
        for f in &functions {
            let scope = Scope {
                name: &f.name,
                entry: f.entry,
                size: f.size,
                entries: &known,
                tables: &tables,
            };
            cfgs.push(cfg::build(table.code_mut(), &scope, &mut warnings));
        }
        warnings.extend(table.warnings().iter().cloned());
        let call_graph = CallGraph::build(&functions, &cfgs, &by_entry);
        Ok(Program {
            xlen,
            entry,
            table,
            functions,
            cfgs,
            jump_tables,
            call_graph,
            warnings,
            by_entry,
        })
    }

    /// The function whose entry is `addr`.
    pub fn function_at(&self, addr: Addr) -> Option<FuncId> {
        self.by_entry.get(&addr).copied()
    }

    /// The function named `name` (or with `name` among its aliases).
    pub fn function_named(&self, name: &str) -> Result<FuncId, ProgramError> {
        self.functions
            .iter()
            .position(|f| f.name == name || f.aliases.iter().any(|a| a == name))
            .map(|i| FuncId(i as u32))
            .ok_or_else(|| ProgramError::UnknownFunction { name: name.into() })
    }

    /// A function.
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id.index()]
    }

    /// A function's CFG.
    pub fn cfg(&self, id: FuncId) -> &Cfg {
        &self.cfgs[id.index()]
    }

    /// A function's loops.
    pub fn loops(&self, id: FuncId) -> LoopNest {
        loops::find(self.cfg(id), &self.table)
    }

    /// A function's if-else regions.
    pub fn regions(&self, id: FuncId) -> Vec<Region> {
        regions::find(self.cfg(id), &self.loops(id))
    }

    /// The function containing `addr`: the one whose CFG has a block
    /// covering it, else the nearest function entry at or below it.
    pub fn function_containing(&self, addr: Addr) -> Option<FuncId> {
        let i = self.functions.partition_point(|f| f.entry <= addr);
        let mut best = None;
        for j in (0..i).rev() {
            let f = &self.functions[j];
            let inside = match f.size {
                Some(s) => addr.0 - f.entry.0 < s,
                None => false,
            };
            if inside {
                return Some(FuncId(j as u32));
            }
            if best.is_none() {
                best = Some(FuncId(j as u32));
            }
        }
        best
    }
}

fn table_warn(warnings: &mut Vec<Warning>, from: Addr, to: Addr, error: ProgramError) {
    warnings.push(Warning::BadTarget { from, to, error });
}

/// Functions from the symbol table: aliases merged, zero sizes and partial
/// overlaps reported, symbols outside the code dropped.
fn symbol_functions(code: &Code, symbols: &[Symbol], warnings: &mut Vec<Warning>) -> Vec<Function> {
    let mut funcs: Vec<Function> = Vec::new();
    let mut syms: Vec<&Symbol> = symbols.iter().filter(|s| s.is_function).collect();
    syms.sort_by_key(|s| (s.addr, !s.is_global, s.name.clone()));
    for s in syms {
        let addr = Addr(s.addr);
        if !code.contains(addr) {
            warnings.push(Warning::SymbolOutsideCode {
                name: s.name.clone(),
                addr,
            });
            continue;
        }
        if let Some(f) = funcs.last_mut().filter(|f| f.entry == addr) {
            f.aliases.push(s.name.clone());
            if s.size > 0 {
                f.size = Some(f.size.unwrap_or(0).max(s.size));
            }
            continue;
        }
        funcs.push(Function {
            name: s.name.clone(),
            aliases: Vec::new(),
            entry: addr,
            size: (s.size > 0).then_some(s.size),
            source: FunctionSource::Symbol,
        });
    }
    // Report zero sizes only for functions none of whose aliases has one.
    for f in &funcs {
        if f.size.is_none() {
            warnings.push(Warning::ZeroSizeSymbol {
                name: f.name.clone(),
                addr: f.entry,
            });
        }
    }
    // Nested symbols (millicode entry points inside one another) are
    // normal; a partial overlap is not.
    let mut open: Option<(usize, u64)> = None;
    for (i, f) in funcs.iter().enumerate() {
        let Some(size) = f.size else { continue };
        let end = f.entry.0.saturating_add(size);
        if let Some((j, open_end)) = open {
            if f.entry.0 < open_end && end > open_end {
                warnings.push(Warning::OverlappingSymbols {
                    first: funcs[j].name.clone(),
                    first_addr: funcs[j].entry,
                    second: f.name.clone(),
                    second_addr: f.entry,
                });
            }
        }
        if !matches!(open, Some((_, e)) if end <= e) {
            open = Some((i, end));
        }
    }
    funcs
}
