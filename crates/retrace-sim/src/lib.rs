//! # retrace-sim
//!
//! The RISC-V machine retrace runs programs on: shared [`Memory`], one or
//! more [`Hart`]s (M and U modes, the CSRs bare-metal programs use), RISC-V
//! semihosting and HTIF `tohost` for I/O and exit, and the functional
//! engine, which executes predecoded blocks at hundreds of millions of
//! instructions per second and reports what it does to an [`Observer`].
//!
//! ```no_run
//! use retrace_sim::{Machine, MachineConfig, HostConfig, Console};
//! let bytes = std::fs::read("prog.elf").unwrap();
//! let elf = retrace_program::Elf::parse(&bytes).unwrap();
//! let host = HostConfig { cmdline: "prog.elf".into(), ..HostConfig::default() };
//! let mut m = Machine::new(&elf, &MachineConfig::default(), host, Console::null()).unwrap();
//! let result = m.run(Some(1_000_000_000), &mut ());
//! println!("{} instructions, stop: {}", result.instructions, result.stop);
//! ```
//!
//! Several harts take turns in a fixed order and synchronise through the
//! API of [`sync`] (channels, mutexes, barriers, semaphores, reached by
//! `ecall`); [`clocked`] times them on a core each, in the order of their
//! clocks. docs/MULTIPROCESSOR.md is the user's side of both.
//!
//! The memory map follows QEMU's `virt` machine as the oracle runs it
//! (`-M virt -bios none`): RAM at `0x8000_0000`, 128 MiB by default; the
//! program is loaded by physical address; execution starts at the ELF entry
//! with `a0` = hart id and `a1` = the address where QEMU would put the device
//! tree. `SYS_HEAPINFO` describes the same layout QEMU does.
#![deny(missing_docs)]

pub mod attribution;
pub mod blocks;
pub mod check;
pub mod clocked;
pub mod csr;
pub mod cycle;
mod engine;
pub mod fpu;
pub mod frequency;
pub mod functions;
pub mod hart;
pub mod memory;
pub mod observer;
pub mod record;
pub mod semihost;
pub mod sync;
mod translate;

pub use csr::{Cause, Priv};
pub use hart::{Hart, HartStats};
pub use memory::Memory;
pub use observer::{CodeEvent, HartId, HostExit, HostExits, Observer, Retired, TrapEvent};
pub use retrace_isa::csr::Csr;
pub use semihost::{Console, HostConfig};
pub use sync::{Deadlock, HartState, SyncError, SyncEvent, SyncOp, SyncOutcome};

use engine::{BlockCache, Htif};
use retrace_isa::Xlen;
use retrace_program::Elf;
use std::fmt;

/// Machine layout.
#[derive(Clone, Debug)]
pub struct MachineConfig {
    /// Physical address of RAM.
    pub ram_base: u64,
    /// RAM size in bytes.
    pub ram_size: u64,
    /// Number of harts, 1 to [`MAX_HARTS`] (all start at the entry point,
    /// with `a0` = their `mhartid`).
    pub harts: usize,
}

impl Default for MachineConfig {
    /// QEMU `virt`'s defaults: 128 MiB at `0x8000_0000`, one hart.
    fn default() -> Self {
        MachineConfig {
            ram_base: 0x8000_0000,
            ram_size: 128 << 20,
            harts: 1,
        }
    }
}

/// Most harts a machine can have.
pub const MAX_HARTS: usize = 64;

/// Why a program could not be loaded into the machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A `PT_LOAD` segment lies (partly) outside RAM.
    #[error(
        "segment at {addr:#x}..{end:#x} does not fit in memory {ram_base:#x}..{ram_end:#x}",
        end = addr + memsz,
        ram_end = ram_base + ram_size
    )]
    SegmentOutsideMemory {
        /// Load address.
        addr: u64,
        /// Size in memory.
        memsz: u64,
        /// RAM start.
        ram_base: u64,
        /// RAM size.
        ram_size: u64,
    },
    /// The entry point is outside RAM.
    #[error("entry point {entry:#x} is outside memory")]
    EntryOutsideMemory {
        /// The ELF entry point.
        entry: u64,
    },
    /// Nonsense configuration (no harts, tiny RAM).
    #[error("invalid machine configuration: {0}")]
    Config(&'static str),
}

/// A trap nobody handled: the program faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The hart.
    pub hart: HartId,
    /// Address of the faulting instruction.
    pub pc: u64,
    /// The exception.
    pub cause: Cause,
    /// `mtval`: the faulting address, or the instruction bits for an
    /// illegal instruction.
    pub tval: u64,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fault {
            hart,
            pc,
            cause,
            tval,
        } = *self;
        match cause {
            Cause::ILLEGAL_INSTRUCTION => {
                let width = if tval & 3 == 3 { 8 } else { 4 };
                let word = tval as u32;
                write!(
                    f,
                    "illegal instruction 0x{tval:0width$x} at pc {pc:#x} on hart {hart}"
                )?;
                if let Some(text) = fpu::disabled_instruction(word) {
                    write!(
                        f,
                        ": floating-point `{text}` with mstatus.FS Off (the start-up code \
                         must enable the FP unit) or a reserved rounding mode in frm"
                    )
                } else if let Some(ext) = fpu::unimplemented_extension(word) {
                    write!(
                        f,
                        ": it needs the {ext}, which retrace does not simulate; \
                         build with -march=rv32imafc or -march=rv64gc"
                    )
                } else {
                    Ok(())
                }
            }
            Cause::FETCH_ACCESS => write!(
                f,
                "instruction fetch from {pc:#x}, outside memory, on hart {hart}"
            ),
            Cause::LOAD_ACCESS
            | Cause::STORE_ACCESS
            | Cause::LOAD_MISALIGNED
            | Cause::STORE_MISALIGNED => {
                write!(f, "{cause} at address {tval:#x} (pc {pc:#x}, hart {hart})")
            }
            _ => write!(
                f,
                "unhandled {cause} at pc {pc:#x} on hart {hart} (mtval {tval:#x})"
            ),
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The program exited (semihosting exit or HTIF `tohost`).
    Exit {
        /// Its exit code.
        code: u32,
    },
    /// An exception with no handler installed.
    Fault(Fault),
    /// The instruction budget ran out.
    Runaway {
        /// The budget.
        limit: u64,
    },
    /// A semihosting request the configuration does not allow.
    Denied {
        /// The hart.
        hart: HartId,
        /// Address of the request.
        pc: u64,
        /// What was asked for.
        message: String,
    },
    /// A semihosting operation retrace does not implement.
    UnsupportedSemihosting {
        /// The hart.
        hart: HartId,
        /// Address of the request.
        pc: u64,
        /// The operation number.
        op: u64,
    },
    /// The observer asked to stop.
    Observer,
    /// No hart can run: each is blocked in a synchronisation call, or has
    /// exited ([`sync`]).
    Deadlock(Deadlock),
    /// A synchronisation call made wrongly (a bad handle, an unlock of a
    /// mutex held by another hart, …).
    Sync {
        /// The hart.
        hart: HartId,
        /// Address of its `ecall`.
        pc: u64,
        /// What was wrong.
        error: SyncError,
    },
}

impl StopReason {
    /// A short machine-readable name: `exit`, `fault`, `runaway`, `denied`,
    /// `unsupported`, `observer`, `deadlock`, `sync`.
    pub fn kind(&self) -> &'static str {
        match self {
            StopReason::Exit { .. } => "exit",
            StopReason::Fault(_) => "fault",
            StopReason::Runaway { .. } => "runaway",
            StopReason::Denied { .. } => "denied",
            StopReason::UnsupportedSemihosting { .. } => "unsupported",
            StopReason::Observer => "observer",
            StopReason::Deadlock(_) => "deadlock",
            StopReason::Sync { .. } => "sync",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Exit { code } => write!(f, "exited with code {code}"),
            StopReason::Fault(fault) => fault.fmt(f),
            StopReason::Runaway { limit } => write!(f, "still running after {limit} instructions"),
            StopReason::Denied { message, pc, .. } => write!(f, "{message} (pc {pc:#x})"),
            StopReason::UnsupportedSemihosting { op, pc, .. } => {
                write!(f, "unsupported semihosting operation {op:#x} at pc {pc:#x}")
            }
            StopReason::Observer => f.write_str("stopped by the observer"),
            StopReason::Deadlock(d) => d.fmt(f),
            StopReason::Sync { hart, pc, error } => {
                write!(f, "{error} (hart {hart}, pc {pc:#x})")
            }
        }
    }
}

/// The outcome of [`Machine::run`].
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Why it stopped.
    pub stop: StopReason,
    /// Instructions retired by all harts.
    pub instructions: u64,
    /// Per-hart statistics.
    pub harts: Vec<HartStats>,
    /// Times the decoded-code cache was flushed (self-modifying code,
    /// `fence.i`).
    pub cache_flushes: u64,
}

impl RunResult {
    /// The program's exit code, if it exited.
    pub fn exit_code(&self) -> Option<u32> {
        match self.stop {
            StopReason::Exit { code } => Some(code),
            _ => None,
        }
    }
}

/// A RISC-V machine with a program loaded.
pub struct Machine {
    xlen: Xlen,
    /// Shared memory.
    pub memory: Memory,
    /// The harts, indexed by hart id.
    pub harts: Vec<Hart>,
    host: semihost::Semihost,
    cache: BlockCache,
    htif: Htif,
    /// Data addresses not yet handed to a bulk observer.
    address_log: Vec<u64>,
    /// What observed host code told of its branches and jumps, until the
    /// engine tells the observer (`translate::ExitRecord`).
    exit_log: Vec<translate::ExitRecord>,
    /// The synchronisation objects and which harts may run.
    sync: sync::SyncState,
    /// Whether hot blocks run as host code when no observer watches, or
    /// one that accepts it ([`Machine::set_translation`]).
    translation: bool,
    /// The translating engine, made at the first hot block.
    translator: Option<Box<translate::Translator>>,
}

impl fmt::Debug for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Machine")
            .field("xlen", &self.xlen)
            .field("harts", &self.harts)
            .finish_non_exhaustive()
    }
}

/// Instructions each hart runs before the next takes its turn (when the
/// machine has more than one).
pub const QUANTUM: u64 = 10_000;

impl Machine {
    /// Build a machine and load `elf` into it.
    pub fn new(
        elf: &Elf,
        config: &MachineConfig,
        host: HostConfig,
        console: Console,
    ) -> Result<Machine, LoadError> {
        if config.harts == 0 || config.harts > MAX_HARTS {
            return Err(LoadError::Config("the number of harts must be 1 to 64"));
        }
        if config.ram_size < 4096 || config.ram_size > 1 << 40 {
            return Err(LoadError::Config(
                "RAM size must be between 4 KiB and 1 TiB",
            ));
        }
        let mut memory = Memory::new(config.ram_base, config.ram_size, config.harts);
        let mut image_end = config.ram_base;
        for seg in &elf.segments {
            let fits = memory.contains(seg.paddr, seg.memsz) || seg.memsz == 0;
            let Some(dst) = memory
                .slice_mut(seg.paddr, seg.data.len() as u64)
                .filter(|_| fits)
            else {
                return Err(LoadError::SegmentOutsideMemory {
                    addr: seg.paddr,
                    memsz: seg.memsz,
                    ram_base: config.ram_base,
                    ram_size: config.ram_size,
                });
            };
            dst.copy_from_slice(&seg.data);
            image_end = image_end.max(seg.paddr + seg.memsz);
        }
        if !memory.contains(elf.entry, 2) {
            return Err(LoadError::EntryOutsideMemory { entry: elf.entry });
        }
        let ram_end = config.ram_base + config.ram_size;
        // QEMU places the device tree 2 MiB below the end of RAM (aligned),
        // and SYS_HEAPINFO offers the space between the image and it.
        let fdt = ram_end.saturating_sub(2 << 20).max(image_end);
        let heap = [image_end, fdt, fdt, image_end];
        let harts = (0..config.harts)
            .map(|id| {
                let mut h = Hart::new(id, elf.entry);
                h.x[10] = id as u64;
                h.x[11] = fdt;
                h
            })
            .collect();
        let cache = BlockCache::new(&memory);
        Ok(Machine {
            xlen: elf.xlen,
            memory,
            harts,
            host: semihost::Semihost::new(host, console, heap),
            cache,
            address_log: Vec::new(),
            exit_log: Vec::new(),
            sync: sync::SyncState::new(config.harts),
            translation: true,
            translator: None,
            htif: Htif {
                addr: elf.tohost.unwrap_or(u64::MAX),
                exit: None,
            },
        })
    }

    /// Whether hot blocks run as host code translated by Cranelift (the
    /// default) or everything is interpreted. Only runs without an observer,
    /// or with one that accepts it ([`Observer::HOST_CODE`]), translate;
    /// results (and recordings) are the same either way
    /// (`tests/translate.rs`, `tests/record_host.rs`).
    pub fn set_translation(&mut self, on: bool) {
        self.translation = on;
        if !on {
            self.translator = None;
        }
    }

    /// Blocks translated to host code so far (0 when interpreted).
    pub fn translated_blocks(&self) -> u64 {
        self.translator.as_ref().map_or(0, |t| t.translated)
    }

    /// Address of the last instruction hart `h` executed (retired, or an
    /// `ecall`/`ebreak` that entered a handler), as long as the run had an
    /// observer ([`Observer::ENABLED`]); 0 before the first.
    pub fn last_pc(&self, h: usize) -> u64 {
        self.harts.get(h).map(|hart| hart.last_pc).unwrap_or(0)
    }

    /// Whether hart `h` may run, waits in a synchronisation call, or has
    /// exited.
    pub fn hart_state(&self, h: HartId) -> HartState {
        self.sync.state(h)
    }

    /// Register width.
    pub fn xlen(&self) -> Xlen {
        self.xlen
    }

    /// Run until the program stops or `max_insns` instructions (over all
    /// harts) have retired — an idle trap (one taken with nothing retired
    /// since the previous, [`HartStats::idle_traps`]) counting as one more,
    /// so that a handler which traps at once still ends as a runaway.
    ///
    /// Harts take turns of [`QUANTUM`] instructions in the order of their
    /// ids, skipping those that wait in a synchronisation call or have
    /// exited; a turn also ends when its hart blocks. The order depends on
    /// nothing but the program, so runs repeat exactly. When no hart can
    /// run the run stops with [`StopReason::Deadlock`].
    pub fn run<O: Observer>(&mut self, max_insns: Option<u64>, obs: &mut O) -> RunResult {
        let stop = match self.xlen {
            Xlen::Rv32 => self.take_turns::<false, O>(max_insns, obs),
            Xlen::Rv64 => self.take_turns::<true, O>(max_insns, obs),
        };
        self.end_run(stop)
    }

    /// [`Machine::run`]'s turns, for one register width: a program whose
    /// harts block every few hundred instructions takes a turn as often.
    fn take_turns<const RV64: bool, O: Observer>(
        &mut self,
        max_insns: Option<u64>,
        obs: &mut O,
    ) -> StopReason {
        let limit = max_insns.unwrap_or(u64::MAX);
        let mut left = limit;
        let single = self.harts.len() == 1;
        'run: loop {
            let mut ran = false;
            for h in 0..self.harts.len() {
                if left == 0 {
                    break 'run StopReason::Runaway { limit };
                }
                if !self.sync.runnable(h) {
                    continue;
                }
                ran = true;
                let turn = if single { left } else { left.min(QUANTUM) };
                let work =
                    |m: &Machine| m.harts[h].stats.instructions + m.harts[h].stats.idle_traps;
                let before = work(self);
                let stop = self.turn::<RV64, O>(h, turn, obs);
                left = left.saturating_sub(work(self) - before);
                if let Some(stop) = stop {
                    break 'run stop;
                }
            }
            if !ran {
                break 'run StopReason::Deadlock(self.sync.deadlock());
            }
        }
    }

    /// Why no hart can run, when none can: each hart that has not exited,
    /// with what it waits for.
    pub fn deadlock(&self) -> Deadlock {
        self.sync.deadlock()
    }

    /// The result of a run that stopped for `stop`, with the console
    /// flushed: for engines that schedule harts themselves
    /// ([`Machine::run_hart_for`]).
    pub fn end_run(&mut self, stop: StopReason) -> RunResult {
        self.host.flush();
        RunResult {
            stop,
            instructions: self.harts.iter().map(|h| h.stats.instructions).sum(),
            harts: self.harts.iter().map(|h| h.stats).collect(),
            cache_flushes: self.cache.flushes,
        }
    }

    /// Run hart `h` alone for at most `budget` instructions (idle traps
    /// counting as one each): `None` if the budget ran out or the hart
    /// cannot run on (it blocked in a synchronisation call, or exited:
    /// [`Machine::hart_state`]), else why the run stops. This is the
    /// building block for engines that schedule harts themselves.
    pub fn run_hart_for<O: Observer>(
        &mut self,
        h: HartId,
        budget: u64,
        obs: &mut O,
    ) -> Option<StopReason> {
        if h >= self.harts.len() {
            return Some(StopReason::Observer);
        }
        if !self.sync.runnable(h) {
            return None;
        }
        match self.xlen {
            Xlen::Rv32 => self.turn::<false, O>(h, budget, obs),
            Xlen::Rv64 => self.turn::<true, O>(h, budget, obs),
        }
    }

    /// Runnable hart `h`'s turn of at most `budget` instructions
    /// ([`Machine::run_hart_for`]).
    #[inline(always)]
    fn turn<const RV64: bool, O: Observer>(
        &mut self,
        h: HartId,
        budget: u64,
        obs: &mut O,
    ) -> Option<StopReason> {
        let stop = self.run_hart::<RV64, O>(h, budget, obs);
        if O::ENABLED && O::BULK_ADDRESSES {
            engine::hand_over_addresses(&mut self.address_log, h, obs);
        }
        stop
    }
}
