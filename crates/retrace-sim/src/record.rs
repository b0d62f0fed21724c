//! The recorder: an [`Observer`] that writes a run's branch history to a
//! `.rtrace` file — seed 000's branch-history bit sequence, plus what a
//! machine-level replay needs to stay exact: indirect targets (of jumps,
//! calls, trap entries and returns) and the escapes of returns that did not
//! go where a shadow return stack said.
//!
//! What each event writes is the recording protocol,
//! [`retrace_trace::protocol`], which the replay (`retrace-estimate`) reads
//! through the same module; this observer only tells its [`Encoder`] which
//! event happened on which hart. `docs/FORMATS.md` states the rules.
//!
//! Every synchronous trap records: an `ecall` or `ebreak` that enters a
//! handler ends its partial program and is an indirect event; any other
//! trap (an exception, whose instruction does not execute) is a trap record
//! holding the instruction count at which the replay must cut the partial
//! program it is in.
//!
//! Code the program's file does not hold — copied into RAM, patched in
//! place, built in a data array — is recorded as the run is about to
//! execute it. The recorder keeps a *shadow* of the code the replay will
//! believe: the file's executable image, plus every code event recorded so
//! far. Each block the engine decodes is compared with it; a block that
//! differs records a code event (the instruction count, and the bytes of
//! the memory around the block that differ from the shadow), which the
//! shadow then takes in. Every block the engine runs equals memory (a
//! store to decoded code or `fence.i` drops the decodings) and equals the
//! shadow (checked when it is decoded), so every instruction the run
//! executes is the one the replay reads.

use crate::observer::{CodeEvent, HartId, Observer, TrapEvent};
use retrace_isa::{Flow, Inst};
use retrace_trace::protocol::loops::{FixedSite, LoopEncoder, LoopStats};
use retrace_trace::protocol::sync::{SyncCall, SyncEncoder};
use retrace_trace::protocol::Encoder;
use retrace_trace::{Totals, TraceError, TraceWriter, WriteSummary};
use std::io::Write;

/// Writes the trace of a run; see the module docs.
pub struct Recorder<W: Write> {
    encoder: Encoder<W>,
    harts: Vec<HartTraps>,
    /// The program's code as the replay will see it (see the module docs):
    /// to record code the file does not hold, and to tell a breakpoint at a
    /// semihosting sequence (taken from U-mode, where it is no semihosting
    /// call) from a plain one, as the replay's partial-program table does.
    code: Option<retrace_program::Code>,
    /// Code events recorded.
    code_events: u64,
    /// Why the recording stopped the run, when it did.
    unsupported: Option<String>,
    /// Data caches simulated during the run, to measure miss rates that the
    /// replay cannot derive from branch history.
    dcaches: Option<DcacheMeter>,
    /// Aggregated loops (seed 000, embodiment 2): in front of the encoder's
    /// branch event, their continue tests count instead of writing bits.
    loops: Option<LoopEncoder>,
    /// The plan has fixed sites (see [`Recorder::aggregate`]).
    fixed: bool,
    /// A run of several harts: each hart's synchronisation events
    /// ([`retrace_trace::protocol::sync`]) and the calls so far.
    sync: Option<(Vec<SyncEncoder>, u64)>,
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

/// One hart's traps, as far as the recorder needs them.
#[derive(Clone, Copy, Default)]
struct HartTraps {
    /// `ecall`s and `ebreak`s that entered a trap handler: executed for the
    /// replay, though not retired.
    calls: u64,
    /// The previous trap: instructions retired before it and its handler.
    last: Option<(u64, u64)>,
}

impl<W: Write> Recorder<W> {
    /// Record into `writer` (which has written the header).
    pub fn new(writer: TraceWriter<W>, harts: usize) -> Recorder<W> {
        Recorder {
            encoder: Encoder::new(writer, harts),
            harts: vec![HartTraps::default(); harts],
            code: None,
            code_events: 0,
            unsupported: None,
            dcaches: None,
            loops: None,
            fixed: false,
            // One hart's trace stays what it always was: its replay needs
            // no synchronisation events.
            sync: (harts > 1).then(|| (vec![SyncEncoder::default(); harts], 0)),
        }
    }

    /// Aggregate the loops whose continue tests are `sites` (address, and
    /// whether the taken outcome continues the loop): their outcomes are
    /// counted into the trace's loop runs instead of written as bits, and
    /// the plan is written first. Call before the run.
    pub fn aggregate_loops(&mut self, sites: &[(u64, bool)]) {
        self.aggregate(sites, &[]);
    }

    /// [`Recorder::aggregate_loops`], and make `fixed` fixed sites (seed
    /// 000's embodiment 3, lossy): branches that write nothing and that the
    /// replay always takes one way. A run with fixed sites cannot take a
    /// trap in the middle of a partial program or write code (the replay,
    /// which walks other instructions than the run, could not place
    /// them): the recording stops there as unsupported.
    pub fn aggregate(&mut self, sites: &[(u64, bool)], fixed: &[FixedSite]) {
        if !sites.is_empty() || !fixed.is_empty() {
            self.loops = Some(LoopEncoder::with_fixed(&mut self.encoder, sites, fixed));
            self.fixed = !fixed.is_empty();
        }
    }

    /// Refuse, in a recording with fixed sites, an event the replay could
    /// not place.
    fn refuse_with_fixed(&mut self, what: &str) {
        if self.fixed {
            self.unsupported.get_or_insert_with(|| {
                format!("{what} in a recording with lossy aggregation (fixed if-else sites): record with --aggregate loops or none")
            });
        }
    }

    /// The program's code: needed to record a breakpoint trap at a
    /// semihosting sequence (an `ebreak` between `slli x0,x0,0x1f` and
    /// `srai x0,x0,7`, executed in U-mode) as the replay sees it.
    pub fn with_code(mut self, code: retrace_program::Code) -> Recorder<W> {
        self.code = Some(code);
        self
    }

    /// Also measure the miss rate of these data-cache geometries.
    pub fn measure_dcaches(&mut self, geometries: &[retrace_timing::CacheModel]) {
        if !geometries.is_empty() {
            self.dcaches = Some(DcacheMeter::start(geometries));
        }
    }

    /// End the aggregated loops' executions in progress and write their
    /// runs (as [`Recorder::finish`] does): what loop aggregation did in
    /// the whole run.
    pub fn finish_loops(&mut self) -> LoopStats {
        match &mut self.loops {
            Some(l) => {
                l.finish(&mut self.encoder);
                l.stats(&self.encoder)
            }
            None => LoopStats::default(),
        }
    }

    /// Code events recorded so far (code the program's file does not hold).
    pub fn code_events(&self) -> u64 {
        self.code_events
    }

    /// Why the run could not be recorded, if the recorder stopped it
    /// ([`Observer::keep_going`]): it would never have ended on its own.
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
        // Branch, indirect and escape counts are the encoder's to fill in.
        let totals = Totals {
            instructions: run.instructions + self.harts.iter().map(|h| h.calls).sum::<u64>(),
            exit_code,
            last_pc: machine.last_pc(0),
            ..Totals::default()
        };
        if let Some(l) = &mut self.loops {
            l.finish(&mut self.encoder);
        }
        if let Some((encoders, _)) = &mut self.sync {
            // Each hart's end: what its replay walks, and where it stops.
            for (h, e) in encoders.iter_mut().enumerate() {
                let executed = machine.harts[h].stats.instructions + self.harts[h].calls;
                let items = e.end(executed, machine.last_pc(h));
                self.encoder.sync_items(h as u16, &items);
            }
        }
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
        self.encoder.finish(totals, &measured)
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
    fn branch(&mut self, hart: HartId, pc: u64, _inst: &Inst, taken: bool, _target: u64) {
        match &mut self.loops {
            None => self.encoder.branch(hart as u16, taken),
            Some(l) => l.branch(&mut self.encoder, hart as u16, pc, taken),
        }
    }

    // Out of line: calls, returns and indirect jumps are a fraction of the
    // instructions, and inlined this hook crowded the engine's loop.
    #[inline(never)]
    fn jump(&mut self, hart: HartId, pc: u64, inst: &Inst, flow: Flow, target: u64) {
        let h = hart as u16;
        match flow {
            Flow::Call => self.encoder.call(h, inst.fallthrough(pc)),
            Flow::IndirectCall => self
                .encoder
                .indirect_call(h, pc, target, inst.fallthrough(pc)),
            Flow::IndirectJump => self.encoder.indirect(h, pc, target),
            Flow::Return => {
                self.encoder.ret(h, target);
            }
            _ => {}
        }
    }

    fn trap(&mut self, ev: &TrapEvent) {
        let Some(handler) = ev.handler else { return };
        let h = ev.hart as u16;
        let Some(t) = self.harts.get_mut(ev.hart) else {
            return;
        };
        if ev.pc == handler
            && t.last
                .is_some_and(|(r, to)| r == ev.retired && to == handler)
        {
            // The handler's first instruction trapped again, with nothing
            // retired since it was entered: nothing changes from one trap to
            // the next, so the run would go on forever without retiring an
            // instruction (and `--max-insns` would never stop it).
            self.unsupported.get_or_insert_with(|| {
                format!(
                    "the trap handler at {handler:#x} traps at its first instruction ({}): the program would loop forever without retiring an instruction",
                    ev.cause
                )
            });
        }
        t.last = Some((ev.retired, handler));
        if ev.cause.is_call() {
            // An ecall/ebreak that entered a handler has executed as far as
            // the replay is concerned, though it did not retire (see
            // `Machine::last_pc`).
            t.calls += 1;
            let semihost_site = ev.cause == crate::csr::Cause::BREAKPOINT
                && self
                    .code
                    .as_ref()
                    .is_some_and(|c| c.is_semihost_ebreak(retrace_program::Addr(ev.pc)));
            if !semihost_site {
                // It ends a partial program: the replay reads the handler
                // from the indirect stream, site = the trapping pc.
                self.encoder.trap_entry(h, ev.pc, handler);
                return;
            }
            // A semihosting sequence's `ebreak` executed in U-mode is a
            // plain breakpoint, but the replay's table takes it for a
            // semihosting call and continues after it: the trap is one
            // after the `ebreak`, before the next instruction.
        }
        // The replay cuts the partial program it is in after as many
        // instructions as it has executed by now.
        let executed = ev.retired + t.calls;
        self.refuse_with_fixed("a trap in the middle of a partial program");
        if let Some(l) = &mut self.loops {
            l.trap(&mut self.encoder, h);
        }
        self.encoder.trap(h, executed, handler);
    }

    fn keep_going(&mut self) -> bool {
        self.unsupported.is_none()
    }

    /// A synchronisation call's `ecall` ends a partial program like any
    /// `ecall`, and the replay reads where it went from the indirect
    /// stream: on after itself, once the call completes (at once, or when
    /// another hart completes it). With several harts each call is also a
    /// synchronisation event of its hart, recorded when it is made: where,
    /// which call, which object, and its place in the run's order. How it
    /// went is not recorded; the replay of several harts works that out
    /// for the cores it times.
    fn sync(&mut self, ev: &crate::sync::SyncEvent) {
        use crate::sync::SyncOutcome;
        if matches!(ev.outcome, SyncOutcome::Done | SyncOutcome::Resumed { .. }) {
            self.encoder.indirect(ev.hart as u16, ev.pc, ev.pc + 4);
        }
        let Some((encoders, seq)) = &mut self.sync else {
            return;
        };
        if matches!(ev.outcome, SyncOutcome::Resumed { .. }) {
            return;
        }
        let calls = self.harts.get(ev.hart).map_or(0, |t| t.calls);
        let call = SyncCall {
            at: ev.retired + calls,
            op: ev.op.0,
            seq: *seq,
            object: ev.op.object_kind().map(|_| (ev.object, ev.param)),
        };
        *seq += 1;
        let items = encoders[ev.hart].call(&call);
        self.encoder.sync_items(ev.hart as u16, &items);
    }

    fn trap_return(&mut self, hart: HartId, pc: u64, target: u64) {
        self.encoder.trap_return(hart as u16, pc, target);
    }

    const CODE: bool = true;

    fn code(&mut self, ev: &CodeEvent<'_>) {
        let Some(shadow) = &mut self.code else { return };
        if shadow.holds(retrace_program::Addr(ev.pc), ev.block()) {
            return;
        }
        let base = retrace_program::Addr(ev.base);
        let Some((lo, hi)) = shadow.differs(base, ev.window) else {
            return;
        };
        // Whole halfwords: the replay's code starts regions at even
        // addresses.
        let (lo, hi) = (lo & !1, (hi + 1).min(ev.window.len()) & !1);
        let (lo, hi) = (lo, hi.max(lo + 2).min(ev.window.len()));
        let bytes = &ev.window[lo..hi];
        let addr = ev.base + lo as u64;
        shadow.patch(retrace_program::Addr(addr), bytes);
        let calls = self.harts.get(ev.hart).map_or(0, |t| t.calls);
        self.refuse_with_fixed("code written at run time");
        // Aggregated loops: a code event ends the execution in progress, as
        // a trap does, so the replay's history resets at the same point.
        if let Some(l) = &mut self.loops {
            l.trap(&mut self.encoder, ev.hart as u16);
        }
        self.encoder
            .code(ev.hart as u16, ev.retired + calls, addr, bytes);
        self.code_events += 1;
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
    /// What loop aggregation did (all 0 without it).
    pub loops: LoopStats,
    /// Each hart's time on the cores that scheduled the run
    /// ([`record_run_harts`] with a schedule; empty otherwise).
    pub clocked: Vec<crate::clocked::HartTime>,
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
    /// The recorder stopped the run: it could not have been recorded (it
    /// would never have ended: a trap handler that traps at its first
    /// instruction).
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
    header: retrace_trace::Header,
    dcaches: &[retrace_timing::CacheModel],
) -> Result<Recording, RecordError> {
    record_run_watched(elf, host, console, max_insns, out, header, dcaches, &mut ())
}

/// [`record_run`] while `watcher` observes the same run (cycle-level
/// cores, a pc summary): one execution of the program instead of one per
/// observer. The watcher sees the run the recording describes.
#[allow(clippy::too_many_arguments)]
pub fn record_run_watched<W: Write, O: Observer>(
    elf: &retrace_program::Elf,
    host: crate::HostConfig,
    console: crate::Console,
    max_insns: Option<u64>,
    out: W,
    header: retrace_trace::Header,
    dcaches: &[retrace_timing::CacheModel],
    watcher: &mut O,
) -> Result<Recording, RecordError> {
    record_run_planned(
        elf,
        host,
        console,
        max_insns,
        out,
        header,
        dcaches,
        watcher,
        &[],
        &[],
    )
}

/// [`record_run_watched`] aggregating the loops whose continue tests are
/// `loops` and the `fixed` if-else sites (see [`Recorder::aggregate`];
/// empty: none).
#[allow(clippy::too_many_arguments)]
pub fn record_run_planned<W: Write, O: Observer>(
    elf: &retrace_program::Elf,
    host: crate::HostConfig,
    console: crate::Console,
    max_insns: Option<u64>,
    out: W,
    header: retrace_trace::Header,
    dcaches: &[retrace_timing::CacheModel],
    watcher: &mut O,
    loops: &[(u64, bool)],
    fixed: &[FixedSite],
) -> Result<Recording, RecordError> {
    let plan = Plan {
        loops,
        fixed,
        harts: 1,
        schedule: None,
    };
    record_with(
        elf, host, console, max_insns, out, header, dcaches, watcher, plan,
    )
}

/// What a recording runs besides the program: its loop plan, its harts,
/// and the cores whose clocks schedule them (`None`: the functional
/// engine's fixed turns).
struct Plan<'a> {
    loops: &'a [(u64, bool)],
    fixed: &'a [FixedSite],
    harts: usize,
    schedule: Option<&'a [&'a retrace_timing::CoreModel]>,
}

/// Record a run of `elf` on `harts` harts: each hart's branch history and
/// its synchronisation events. With `schedule` (one core model per hart)
/// the harts run in the order of those cores' clocks, exactly as the
/// multi-hart cycle-level engine runs them ([`crate::clocked`]), so a
/// replay on the same cores meets the calls in the recorded order; without
/// it they take the functional engine's fixed turns. `watcher` observes
/// the same run.
#[allow(clippy::too_many_arguments)]
pub fn record_run_harts<W: Write, O: Observer>(
    elf: &retrace_program::Elf,
    host: crate::HostConfig,
    console: crate::Console,
    max_insns: Option<u64>,
    out: W,
    header: retrace_trace::Header,
    dcaches: &[retrace_timing::CacheModel],
    watcher: &mut O,
    harts: usize,
    schedule: Option<&[&retrace_timing::CoreModel]>,
) -> Result<Recording, RecordError> {
    let plan = Plan {
        loops: &[],
        fixed: &[],
        harts,
        schedule,
    };
    record_with(
        elf, host, console, max_insns, out, header, dcaches, watcher, plan,
    )
}

#[allow(clippy::too_many_arguments)]
fn record_with<W: Write, O: Observer>(
    elf: &retrace_program::Elf,
    host: crate::HostConfig,
    console: crate::Console,
    max_insns: Option<u64>,
    out: W,
    mut header: retrace_trace::Header,
    dcaches: &[retrace_timing::CacheModel],
    watcher: &mut O,
    plan: Plan<'_>,
) -> Result<Recording, RecordError> {
    let config = crate::MachineConfig {
        harts: plan.harts,
        ..crate::MachineConfig::default()
    };
    let mut machine = crate::Machine::new(elf, &config, host, console)?;
    header.identity = elf.identity();
    header.xlen = elf.xlen.bits() as u8;
    header.harts = plan.harts as u16;
    let writer = TraceWriter::new(out, &header)?;
    let mut rec = Recorder::new(writer, plan.harts);
    if let Ok(code) = retrace_program::Code::from_elf(elf) {
        rec = rec.with_code(code);
    }
    rec.measure_dcaches(dcaches);
    rec.aggregate(plan.loops, plan.fixed);
    let mut clocked = Vec::new();
    let run = match plan.schedule {
        None => machine.run(max_insns, &mut (&mut rec, watcher)),
        Some(models) => {
            let mut cores =
                crate::clocked::ClockedHarts::heterogeneous(models, &[]).reading_code(elf);
            let run = crate::clocked::run_by_clock_watched(
                &mut machine,
                max_insns,
                &mut cores,
                &mut (&mut rec, watcher),
            );
            clocked = cores.times();
            run
        }
    };
    if let Some(why) = rec.unsupported() {
        return Err(RecordError::Unsupported(why.to_string()));
    }
    let exit = match run.stop {
        crate::StopReason::Exit { code } => i64::from(code),
        _ => -1,
    };
    let loops = rec.finish_loops();
    let trace = rec.finish(&machine, &run, exit)?;
    Ok(Recording {
        run,
        branches: trace.bits,
        trace,
        loops,
        clocked,
    })
}
