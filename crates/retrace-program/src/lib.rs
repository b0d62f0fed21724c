//! # retrace-program
//!
//! What retrace knows about a program without running it:
//!
//! - [`Elf`]: loading a RISC-V ELF executable — register width, entry
//!   point, load segments, executable sections, symbols, HTIF addresses and
//!   identity hash.
//! - [`Code`]: the executable bytes with a decode cache, so every analysis
//!   decodes each reachable instruction once.
//! - [`Program`]: the whole-program analysis — functions (symbols, or
//!   recursive descent in stripped files), one [`Cfg`] per function,
//!   recognised jump tables, the [`CallGraph`] with recursion, and
//! - [`PpTable`]: the partial-program table of US patent 8,448,140, the structure the
//!   replay walks — dense [`PpId`]s, successors resolved in [`End`], paths
//!   as [`Run`]s, and run-time extension with [`PpTable::ensure`];
//! - [`loops`]: dominators, natural loops and the loop nest with the patent's
//!   Z1/X1/X2 conditions and trip-count test; [`regions`]: if-else
//!   regions; [`dot`]: Graphviz output; [`check`]: following the table
//!   along an execution instruction by instruction; [`Names`] and
//!   [`FunctionRanges`]: addresses as `symbol+offset`, functions as ranges.
//!
//! Malformed code is never a panic: problems the analysis can work around
//! are [`Warning`]s with addresses, the rest [`ProgramError`]s.
//!
//! ```no_run
//! use retrace_program::{Elf, End, Program};
//! let bytes = std::fs::read("prog.elf").unwrap();
//! let elf = Elf::parse(&bytes).unwrap();
//! let program = Program::analyse(&elf).unwrap();
//! let table = &program.table;
//! let mut pp = table.lookup(program.entry.into()).unwrap();
//! // Follow the not-taken side of every branch until something else ends a PP.
//! while let End::Branch { not_taken: Some(next), .. } = table.get(pp).end {
//!     pp = next;
//! }
//! for (pc, inst) in table.insts(pp) {
//!     println!("{pc} {:?}", inst.op);
//! }
//! ```
#![deny(missing_docs)]

pub mod addr;
pub mod callgraph;
pub mod cfg;
pub mod code;
pub mod dom;
pub mod dot;
pub mod elf;
pub mod error;
pub mod jumptable;
pub mod lines;
pub mod loops;
pub mod names;
pub mod pp;
pub mod program;
pub mod regions;
pub mod table_check;

pub use addr::Addr;
pub use callgraph::CallGraph;
pub use cfg::{Block, BlockId, Cfg, EdgeKind, Terminator};
pub use code::Code;
pub use elf::{CodeSection, Elf, ElfError, Segment, SegmentFlags, Symbol};
pub use error::{ProgramError, Warning};
pub use jumptable::JumpTable;
pub use loops::{Loop, LoopId, LoopNest, TripCount};
pub use names::{FunctionRanges, Names};
pub use pp::{Cursor, End, EndKind, PartialProgram, PpId, PpTable, Run, StartKind, StartKinds};
pub use program::{FuncId, Function, FunctionSource, Program};
pub use regions::{Region, RegionKind};
pub use table_check::{CheckReport, Checker, Mismatch};
