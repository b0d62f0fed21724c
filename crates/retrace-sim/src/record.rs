//! The recorder: an [`Observer`] that writes a run's branch history to a
//! `.rtrace` file — seed 000's branch-history bit sequence, plus what a
//! machine-level replay needs to stay exact:
//!
//! - one bit per conditional branch (1 = taken);
//! - for each indirect jump or call, trap entry (`ecall`, breakpoint) and
//!   trap return, the target, as an index into that site's table of targets
//!   seen so far (1-based), or 0 followed by the new target;
//! - a shadow return stack, pushed at calls and popped at returns, and an
//!   *escape* record — matching returns since the last escape, then the real
//!   target — only when a return goes elsewhere than the stack says. On an
//!   escape the stack is unwound to the target if it is on it (`longjmp`).
//!
//! The replay (`retrace-estimate`, `machine.rs` and `walk.rs`) mirrors every
//! rule here; `docs/FORMATS.md` states them once for both.

use crate::observer::{HartId, Observer, TrapEvent};
use crate::Cause;
use retrace_isa::{Flow, Inst};
use retrace_trace::{StreamKind, Totals, TraceError, TraceWriter, WriteSummary};
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

/// Slots of [`Recorder`]'s recent-target cache (a power of two).
const RECENT_SLOTS: usize = 256;

/// Per-hart recording state.
#[derive(Default)]
struct HartRecord {
    stack: Vec<u64>,
    matched: u64,
}

/// Writes the trace of a run; see the module docs.
pub struct Recorder<W: Write> {
    writer: TraceWriter<W>,
    harts: Vec<HartRecord>,
    /// Index (1-based) of each (site, target) pair seen.
    targets: HashMap<(u64, u64), u64>,
    /// Number of targets seen per site.
    site_len: HashMap<u64, u64>,
    /// A direct-mapped cache in front of `targets`: indirect jumps repeat
    /// (a comparator called from qsort, an interpreter's dispatch), and this
    /// keeps the common case to one compare.
    recent: Box<[(u64, u64, u64); RECENT_SLOTS]>,
    totals: Totals,
    /// `ecall`s and `ebreak`s that entered a trap handler.
    trapped_calls: u64,
    unsupported: Option<String>,
    /// Data caches simulated during the run, to measure miss rates that the
    /// replay cannot derive from branch history.
    dcaches: Option<DcacheMeter>,
}

/// Measures data-cache miss rates on a thread of its own: the engine logs
/// data addresses in bulk ([`Observer::addresses`]) and the recording
/// thread hands each full log over (the caches simulated inline cost the
/// engine's loop more than the accesses themselves, and a second core is
/// usually idle while recording).
struct DcacheMeter {
    /// Full buffers to the thread (bounded: at most 4 in flight).
    full: Option<std::sync::mpsc::SyncSender<Vec<u64>>>,
    /// Emptied buffers back, for reuse.
    empty: std::sync::mpsc::Receiver<Vec<u64>>,
    thread:
        Option<std::thread::JoinHandle<Vec<(retrace_timing::CacheModel, retrace_timing::Cache)>>>,
}

impl DcacheMeter {
    fn start(geometries: &[retrace_timing::CacheModel]) -> DcacheMeter {
        let mut caches: Vec<_> = geometries
            .iter()
            .map(|g| (*g, retrace_timing::Cache::new(g)))
            .collect();
        let (full, batches) = std::sync::mpsc::sync_channel::<Vec<u64>>(4);
        let (give_back, empty) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rtrace-dcache".into())
            .spawn(move || {
                for mut batch in batches {
                    for (_, c) in &mut caches {
                        for &addr in &batch {
                            c.access(addr);
                        }
                    }
                    batch.clear();
                    let _ = give_back.send(batch);
                }
                caches
            })
            .ok();
        DcacheMeter {
            full: Some(full),
            empty,
            thread,
        }
    }

    /// Hand `batch` over; returns an empty buffer to fill next.
    fn ship(&mut self, batch: Vec<u64>) -> Vec<u64> {
        if let Some(tx) = &self.full {
            let _ = tx.send(batch);
        }
        self.empty.try_recv().unwrap_or_default()
    }

    /// Wait for the thread and take its caches (none if it could not start).
    fn finish(mut self) -> Vec<(retrace_timing::CacheModel, retrace_timing::Cache)> {
        self.full = None;
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl<W: Write> Recorder<W> {
    /// Record into `writer` (which has written the header).
    pub fn new(writer: TraceWriter<W>, harts: usize) -> Recorder<W> {
        Recorder {
            writer,
            harts: (0..harts).map(|_| HartRecord::default()).collect(),
            targets: HashMap::default(),
            site_len: HashMap::default(),
            recent: Box::new([(u64::MAX, u64::MAX, 0); RECENT_SLOTS]),
            totals: Totals::default(),
            trapped_calls: 0,
            unsupported: None,
            dcaches: None,
        }
    }

    /// Also measure the miss rate of these data-cache geometries.
    pub fn measure_dcaches(&mut self, geometries: &[retrace_timing::CacheModel]) {
        if !geometries.is_empty() {
            self.dcaches = Some(DcacheMeter::start(geometries));
        }
    }

    fn indirect(&mut self, hart: HartId, site: u64, target: u64) {
        let h = hart as u16;
        self.totals.indirect += 1;
        let slot = ((site >> 1) ^ (target >> 1).wrapping_mul(0x9e37_79b9)) as usize % RECENT_SLOTS;
        let r = self.recent[slot];
        if r.0 == site && r.1 == target {
            self.writer.record(h, StreamKind::Indirect, r.2);
            return;
        }
        if let Some(&i) = self.targets.get(&(site, target)) {
            self.recent[slot] = (site, target, i);
            self.writer.record(h, StreamKind::Indirect, i);
        } else {
            let n = self.site_len.entry(site).or_insert(0);
            *n += 1;
            self.targets.insert((site, target), *n);
            self.writer.record(h, StreamKind::Indirect, 0);
            self.writer.record(h, StreamKind::Indirect, target);
        }
    }

    /// Why the run could not be recorded faithfully, if it could not.
    pub fn unsupported(&self) -> Option<&str> {
        self.unsupported.as_deref()
    }

    /// Finish the trace of `run` (on `machine`) with the run's exit code.
    /// The totals count what the replay walks: retired instructions and the
    /// `ecall`s/`ebreak`s that entered a handler.
    pub fn finish(
        mut self,
        machine: &crate::Machine,
        run: &crate::RunResult,
        exit_code: i64,
    ) -> Result<WriteSummary, TraceError> {
        self.totals.exit_code = exit_code;
        self.totals.branches = self.writer.branches();
        self.totals.instructions = run.instructions + self.trapped_calls;
        self.totals.last_pc = machine.last_pc(0);
        let caches = self.dcaches.take().map(DcacheMeter::finish);
        let measured: Vec<_> = caches
            .iter()
            .flatten()
            .map(|(g, c)| retrace_trace::DcacheMeasurement {
                size: g.size,
                ways: g.ways,
                line: g.line,
                accesses: c.hits + c.misses,
                misses: c.misses,
            })
            .collect();
        self.writer.finish_with(&self.totals, &measured)
    }
}

impl<W: Write> Observer for Recorder<W> {
    // Instruction count and last pc come from the machine at the end
    // ([`Recorder::finish`]): a hook on every instruction would cost the
    // recording more than everything else it does.
    const RETIRE: bool = false;

    const BULK_ADDRESSES: bool = true;

    #[inline(never)]
    fn addresses(&mut self, _hart: HartId, log: &mut Vec<u64>) {
        // Measured on the measuring thread (`DcacheMeter`): hand the
        // engine's buffer over and give it an empty one.
        if let Some(m) = &mut self.dcaches {
            let empty = m.ship(std::mem::take(log));
            *log = empty;
        }
    }

    #[inline(always)]
    fn branch(&mut self, hart: HartId, _pc: u64, _inst: &Inst, taken: bool, _target: u64) {
        self.writer.branch(hart as u16, taken);
    }

    // Out of line: calls, returns and indirect jumps are a fraction of the
    // instructions, and inlined this hook crowded the engine's loop.
    #[inline(never)]
    fn jump(&mut self, hart: HartId, pc: u64, inst: &Inst, flow: Flow, target: u64) {
        match flow {
            Flow::Call => self.harts[hart].stack.push(inst.fallthrough(pc)),
            Flow::IndirectCall => {
                self.harts[hart].stack.push(inst.fallthrough(pc));
                self.indirect(hart, pc, target);
            }
            Flow::IndirectJump => self.indirect(hart, pc, target),
            Flow::Return => {
                let h = &mut self.harts[hart];
                if h.stack.pop() == Some(target) {
                    h.matched += 1;
                } else {
                    let matched = std::mem::take(&mut h.matched);
                    if let Some(pos) = h.stack.iter().rposition(|&a| a == target) {
                        h.stack.truncate(pos);
                    }
                    self.totals.escapes += 1;
                    self.writer
                        .record(hart as u16, StreamKind::Escapes, matched);
                    self.writer.record(hart as u16, StreamKind::Escapes, target);
                }
            }
            _ => {}
        }
    }

    fn trap(&mut self, ev: &TrapEvent) {
        let Some(handler) = ev.handler else { return };
        match ev.cause {
            // These end a partial program: the replay reads the handler
            // address from the indirect stream, site = the trapping pc.
            Cause::ECALL_M | Cause::ECALL_S | Cause::ECALL_U | Cause::BREAKPOINT => {
                // Executed as far as the replay is concerned, though not
                // retired (see `Machine::last_pc`).
                self.trapped_calls += 1;
                self.indirect(ev.hart, ev.pc, handler)
            }
            _ => {
                if self.unsupported.is_none() {
                    self.unsupported = Some(format!(
                        "the program took a trap ({}) at pc {:#x} inside a partial program, which recording does not support yet",
                        ev.cause, ev.pc
                    ));
                }
            }
        }
    }

    fn trap_return(&mut self, hart: HartId, pc: u64, target: u64) {
        self.indirect(hart, pc, target);
    }
}

/// What [`record_run`] produced.
#[derive(Debug)]
pub struct Recording {
    /// The run.
    pub run: crate::RunResult,
    /// The trace's sizes.
    pub trace: WriteSummary,
    /// Conditional branches recorded.
    pub branches: u64,
}

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The program could not be loaded.
    #[error(transparent)]
    Load(#[from] crate::LoadError),
    /// Writing the trace failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The run did something the trace cannot represent.
    #[error("{0}")]
    Unsupported(String),
}

/// Run `elf` once in the functional engine, recording its history into
/// `out` (a trace header naming the program is written first).
pub fn record_run<W: Write>(
    elf: &retrace_program::Elf,
    host: crate::HostConfig,
    console: crate::Console,
    max_insns: Option<u64>,
    out: W,
    mut header: retrace_trace::Header,
    dcaches: &[retrace_timing::CacheModel],
) -> Result<Recording, RecordError> {
    let mut machine = crate::Machine::new(elf, &crate::MachineConfig::default(), host, console)?;
    header.identity = elf.identity();
    header.xlen = elf.xlen.bits() as u8;
    header.harts = 1;
    let writer = TraceWriter::new(out, &header)?;
    let mut rec = Recorder::new(writer, 1);
    rec.measure_dcaches(dcaches);
    let run = machine.run(max_insns, &mut rec);
    if let Some(why) = rec.unsupported() {
        return Err(RecordError::Unsupported(why.to_string()));
    }
    let exit = match run.stop {
        crate::StopReason::Exit { code } => i64::from(code),
        _ => -1,
    };
    let trace = rec.finish(&machine, &run, exit)?;
    Ok(Recording {
        run,
        branches: trace.bits,
        trace,
    })
}
