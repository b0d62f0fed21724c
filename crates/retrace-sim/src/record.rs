//! The recorder: an [`Observer`] that writes a run's branch history to a
//! `.rtrace` file — US patent 8,448,140's branch-history bit sequence, plus what a
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

use crate::clocked::Schedule;
use crate::observer::{CodeEvent, HartId, Observer, TrapEvent};
use retrace_isa::{Flow, Inst};
use retrace_trace::protocol::loops::{LoopEncoder, LoopStats, Plan};
use retrace_trace::protocol::regions::{RegionTracker, Step};
use retrace_trace::protocol::sync::{SyncCall, SyncEncoder};
use retrace_trace::protocol::Encoder;
use retrace_trace::{Totals, TraceError, TraceWriter, WriteSummary};
use std::io::Write;

/// Writes the trace of a run; see the module docs.
///
/// `COUNT` makes the recorder count every retired instruction (the
/// engine's [`Observer::retire`] hook, which costs the run its speed): a
/// plan with collapsed regions needs it, to say how many instructions the
/// replay will not walk.
pub struct Recorder<W: Write, const COUNT: bool = false> {
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
    /// Aggregated loops (US patent 8,448,140, embodiment 2): in front of the encoder's
    /// branch event, their continue tests count instead of writing bits.
    loops: Option<LoopEncoder>,
    /// The plan is lossy (see [`Recorder::aggregate`]).
    lossy: bool,
    /// Collapsed regions: where each hart is relative to them.
    regions: Option<Regions>,
    /// A run of several harts: each hart's synchronisation events
    /// ([`retrace_trace::protocol::sync`]) and the calls so far.
    sync: Option<(Vec<SyncEncoder>, u64)>,
}

/// Per hart, the position relative to a plan's collapsed regions and the
/// instruction counts that measure each extent.
struct Regions {
    trackers: Vec<RegionTracker>,
    /// Instructions retired so far.
    retired: Vec<u64>,
    /// `retired` when the open extent started.
    start: Vec<u64>,
}

/// Per hart, the caches that measure the geometries (see [`LruStacks`]).
type Caches = Vec<LruStacks>;

/// Every measured data cache of one line size and one number of sets, as
/// one set-associative LRU cache of the most ways among them: an LRU cache
/// of `w` ways holds exactly the `w` most recent lines of each of its sets
/// (the stack property of LRU, Mattson et al., "Evaluation techniques for
/// storage hierarchies", IBM Systems Journal 9(2), 1970), so where an
/// access finds its line in the recency order says whether each smaller
/// cache hits. The presets' data caches (16 KiB 4-way and 32 KiB 8-way,
/// 64-byte lines, both 64 sets) so cost one simulation instead of two;
/// the counts are `retrace_timing::Cache`'s, which simulates one geometry.
#[derive(Clone)]
struct LruStacks {
    line_shift: u32,
    set_mask: u64,
    /// The most ways of any geometry here.
    ways: usize,
    /// `sets × ways` line numbers, most recently used first within a set;
    /// `u64::MAX` marks an empty way.
    tags: Vec<u64>,
    /// The last line accessed: a repeat is at depth 0 and changes nothing.
    last_line: u64,
    /// Accesses by the depth at which they found their line in its set's
    /// recency order (0 = most recent); the last slot counts lines not
    /// held at all.
    depth: Vec<u64>,
}

impl LruStacks {
    fn new(g: &retrace_timing::CacheModel) -> LruStacks {
        LruStacks {
            line_shift: g.line.trailing_zeros(),
            set_mask: u64::from(g.sets()) - 1,
            ways: g.ways as usize,
            tags: Vec::new(),
            last_line: u64::MAX,
            depth: Vec::new(),
        }
    }

    /// Whether geometry `g` can be measured here (same lines, same sets).
    fn fits(&self, g: &retrace_timing::CacheModel) -> bool {
        (self.line_shift, self.set_mask) == (g.line.trailing_zeros(), u64::from(g.sets()) - 1)
    }

    /// Allocate the tags once every geometry that fits has widened `ways`.
    fn ready(mut self) -> LruStacks {
        self.tags = vec![u64::MAX; (self.set_mask as usize + 1) * self.ways];
        self.depth = vec![0; self.ways + 1];
        self
    }

    #[inline(always)]
    fn access(&mut self, addr: u64) {
        let line = addr >> self.line_shift;
        // Most accesses repeat the previous line (as in `Cache::access`).
        if line == self.last_line {
            self.depth[0] += 1;
            return;
        }
        self.access_other(line);
    }

    #[inline(never)]
    fn access_other(&mut self, line: u64) {
        self.last_line = line;
        let set = (line & self.set_mask) as usize * self.ways;
        let ways = &mut self.tags[set..set + self.ways];
        let (at, depth) = match ways.iter().position(|&t| t == line) {
            Some(i) => (i, i),
            None => (ways.len() - 1, ways.len()),
        };
        // Move the line (or the new one, over the least recent) to the
        // front: an element loop, which these few words do best.
        for k in (1..=at).rev() {
            ways[k] = ways[k - 1];
        }
        ways[0] = line;
        self.depth[depth] += 1;
    }

    /// The measurement of geometry `g` (one that [`LruStacks::fits`]):
    /// its misses are the accesses deeper than its ways.
    fn measure(&self, g: &retrace_timing::CacheModel) -> retrace_trace::DcacheMeasurement {
        let w = (g.ways as usize).min(self.depth.len());
        retrace_trace::DcacheMeasurement {
            size: g.size,
            ways: g.ways,
            line: g.line,
            accesses: self.depth.iter().sum(),
            misses: self.depth[w..].iter().sum(),
        }
    }
}

/// Measures data-cache miss rates on a thread of its own: the engine logs
/// data addresses in bulk ([`Observer::addresses`]) and the recording
/// thread hands each full log over (the caches simulated inline cost the
/// engine's loop more than the accesses themselves, and a second core is
/// usually idle while recording). Each hart has caches of its own, as
/// each core of a multi-hart system has its private data cache.
struct DcacheMeter {
    /// The geometries measured, in order, each with the index of the
    /// [`LruStacks`] that measures it.
    geometries: Vec<(retrace_timing::CacheModel, usize)>,
    /// Full buffers to the thread, with their hart (bounded: at most 4 in
    /// flight).
    full: Option<std::sync::mpsc::SyncSender<(HartId, Vec<u64>)>>,
    /// Emptied buffers back, for reuse.
    empty: std::sync::mpsc::Receiver<Vec<u64>>,
    thread: Option<std::thread::JoinHandle<Vec<Caches>>>,
    /// Per hart, addresses gathered from short logs until there are
    /// enough to ship: the engine hands a hart's log over at the end of
    /// each of its turns, and with several harts scheduled by their clocks
    /// a turn may be a few dozen instructions — one hand-over each would
    /// cost a thread wake-up per turn.
    gathered: Vec<Vec<u64>>,
}

/// Addresses worth one hand-over to the measuring thread.
const SHIP_ADDRESSES: usize = 1 << 15;

impl DcacheMeter {
    fn start(geometries: &[retrace_timing::CacheModel], harts: usize) -> DcacheMeter {
        let mut caches: Caches = Vec::new();
        let mut measured = Vec::new();
        for g in geometries {
            let i = match caches.iter().position(|c| c.fits(g)) {
                Some(i) => i,
                None => {
                    caches.push(LruStacks::new(g));
                    caches.len() - 1
                }
            };
            caches[i].ways = caches[i].ways.max(g.ways as usize);
            measured.push((*g, i));
        }
        let caches: Caches = caches.into_iter().map(LruStacks::ready).collect();
        let mut caches = vec![caches; harts.max(1)];
        let (full, batches) = std::sync::mpsc::sync_channel::<(HartId, Vec<u64>)>(4);
        let (give_back, empty) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rtrace-dcache".into())
            .spawn(move || {
                for (hart, mut batch) in batches {
                    if let Some(caches) = caches.get_mut(hart) {
                        for c in caches {
                            for &addr in &batch {
                                c.access(addr);
                            }
                        }
                    }
                    batch.clear();
                    let _ = give_back.send(batch);
                }
                caches
            })
            .ok();
        DcacheMeter {
            geometries: measured,
            full: Some(full),
            empty,
            thread,
            gathered: vec![Vec::new(); harts.max(1)],
        }
    }

    /// Hand hart `hart`'s `batch` over; returns an empty buffer to fill
    /// next.
    fn ship(&mut self, hart: HartId, batch: Vec<u64>) -> Vec<u64> {
        if let Some(tx) = &self.full {
            let _ = tx.send((hart, batch));
        }
        self.empty.try_recv().unwrap_or_default()
    }

    /// Hart `hart`'s `log` of addresses: shipped as it is when it is long
    /// and nothing of the hart's waits, else gathered until enough are.
    /// Leaves `log` an empty buffer.
    fn take(&mut self, hart: HartId, log: &mut Vec<u64>) {
        let Some(gathered) = self.gathered.get_mut(hart) else {
            return log.clear();
        };
        if gathered.is_empty() && log.len() >= SHIP_ADDRESSES {
            let empty = self.ship(hart, std::mem::take(log));
            *log = empty;
            return;
        }
        gathered.extend_from_slice(log);
        log.clear();
        if gathered.len() >= SHIP_ADDRESSES {
            let batch = std::mem::take(&mut self.gathered[hart]);
            self.gathered[hart] = self.ship(hart, batch);
        }
    }

    /// Wait for the thread and take each hart's measurements, in the
    /// order of the geometries (none if it could not start).
    fn finish(mut self) -> Vec<Vec<retrace_trace::DcacheMeasurement>> {
        for hart in 0..self.gathered.len() {
            let batch = std::mem::take(&mut self.gathered[hart]);
            if !batch.is_empty() {
                self.ship(hart, batch);
            }
        }
        self.full = None;
        let caches = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        caches
            .iter()
            .map(|c| {
                self.geometries
                    .iter()
                    .map(|(g, i)| c[*i].measure(g))
                    .collect()
            })
            .collect()
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

impl<W: Write, const COUNT: bool> Recorder<W, COUNT> {
    /// Record into `writer` (which has written the header).
    pub fn new(writer: TraceWriter<W>, harts: usize) -> Recorder<W, COUNT> {
        Recorder {
            encoder: Encoder::new(writer, harts),
            harts: vec![HartTraps::default(); harts],
            code: None,
            code_events: 0,
            unsupported: None,
            dcaches: None,
            loops: None,
            lossy: false,
            regions: None,
            // One hart's trace stays what it always was: its replay needs
            // no synchronisation events.
            sync: (harts > 1).then(|| (vec![SyncEncoder::default(); harts], 0)),
        }
    }

    /// Aggregate as `plan` says (US patent 8,448,140, embodiments 2–5): continue
    /// tests of aggregated loops count into the trace's loop runs instead
    /// of writing bits; fixed if-else sites write nothing and the replay
    /// takes them one way; collapsed regions write nothing at all (only
    /// with `COUNT`). The plan is written first. A lossy plan cannot follow
    /// a trap in the middle of a partial program or code written at run
    /// time (the replay, which walks other instructions than the run,
    /// could not place them): the recording stops there as unsupported.
    /// Call before the run.
    pub fn aggregate(&mut self, plan: &Plan) {
        if plan.is_empty() {
            return;
        }
        self.loops = Some(LoopEncoder::with_plan(&mut self.encoder, plan));
        self.lossy = plan.is_lossy();
        if !plan.regions.is_empty() {
            if !COUNT {
                self.unsupported.get_or_insert_with(|| {
                    "collapsed regions need a recorder that counts instructions".into()
                });
            }
            let harts = self.harts.len();
            self.regions = Some(Regions {
                trackers: vec![RegionTracker::new(&plan.regions); harts],
                retired: vec![0; harts],
                start: vec![0; harts],
            });
        }
    }

    /// Refuse, in a lossy recording, an event the replay could not place.
    fn refuse_lossy(&mut self, what: &str) {
        if self.lossy {
            self.unsupported.get_or_insert_with(|| {
                format!("{what} in a recording with lossy aggregation (fixed if-else sites or collapsed regions): record with --aggregate loops or none")
            });
        }
    }

    /// A collapsed-region `step` of `hart` that is not [`Step::Outside`]:
    /// nothing is recorded; an extent that ends tells the encoder how many
    /// instructions it held. `true` when the event belongs to an extent.
    #[inline]
    fn region_step(&mut self, hart: HartId, step: Step) -> bool {
        let Some(r) = &mut self.regions else {
            return false;
        };
        // The event's own instruction has not retired yet.
        let now = r.retired[hart] + 1;
        let n = match step {
            Step::Outside => return false,
            Step::Inside => return true,
            Step::Enter(_) => {
                r.start[hart] = now;
                return true;
            }
            Step::Leave(_) => now - r.start[hart],
            Step::Through(_) => 0,
        };
        if let Some(l) = &mut self.loops {
            l.collapsed(&mut self.encoder, n);
        }
        true
    }

    /// What a `jal` or `jalr` of hart `h` at `pc` writes outside
    /// collapsed regions: `fall` is the address after it.
    #[inline(always)]
    fn encode_jump(&mut self, h: u16, pc: u64, flow: Flow, target: u64, fall: u64) {
        match flow {
            Flow::Call => self.encoder.call(h, fall),
            Flow::IndirectCall => self.encoder.indirect_call(h, pc, target, fall),
            Flow::IndirectJump => self.encoder.indirect(h, pc, target),
            Flow::Return => {
                self.encoder.ret(h, target);
            }
            _ => {}
        }
    }

    /// After the run: a run that stopped inside an extent (its budget ran
    /// out there) cannot be replayed with the regions.
    fn check_end(&mut self) {
        let inside = self
            .regions
            .as_ref()
            .and_then(|r| r.trackers.iter().find_map(RegionTracker::inside));
        if let Some(region) = inside {
            self.unsupported.get_or_insert_with(|| {
                format!("the run stopped inside collapsed region {region} (its instruction budget ran out there?): raise --max-insns or record without --aggregate nested/functions")
            });
        }
    }

    /// The program's code: needed to record a breakpoint trap at a
    /// semihosting sequence (an `ebreak` between `slli x0,x0,0x1f` and
    /// `srai x0,x0,7`, executed in U-mode) as the replay sees it.
    pub fn with_code(mut self, code: retrace_program::Code) -> Recorder<W, COUNT> {
        self.code = Some(code);
        self
    }

    /// Also measure the miss rate of these data-cache geometries.
    pub fn measure_dcaches(&mut self, geometries: &[retrace_timing::CacheModel]) {
        if !geometries.is_empty() {
            self.dcaches = Some(DcacheMeter::start(geometries, self.harts.len()));
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
        let caches = self
            .dcaches
            .take()
            .map(DcacheMeter::finish)
            .unwrap_or_default();
        if let Some((encoders, _)) = &mut self.sync {
            // Each hart's end: its own caches' measurements, what its
            // replay walks, and where it stops.
            for (h, e) in encoders.iter_mut().enumerate() {
                for m in caches.get(h).into_iter().flatten() {
                    self.encoder.sync_items(h as u16, &e.dcache(m));
                }
                let executed = machine.harts[h].stats.instructions + self.harts[h].calls;
                let items = e.end(executed, machine.last_pc(h));
                self.encoder.sync_items(h as u16, &items);
            }
        }
        // The whole run's: every hart's private caches together.
        let mut measured: Vec<retrace_trace::DcacheMeasurement> = Vec::new();
        for &m in caches.iter().flatten() {
            match measured
                .iter_mut()
                .find(|t| (t.size, t.ways, t.line) == (m.size, m.ways, m.line))
            {
                Some(t) => {
                    t.accesses += m.accesses;
                    t.misses += m.misses;
                }
                None => measured.push(m),
            }
        }
        self.encoder.finish(totals, &measured)
    }
}

impl<W: Write, const COUNT: bool> Observer for Recorder<W, COUNT> {
    // Instruction count and last pc come from the machine at the end
    // ([`Recorder::finish`]): a hook on every instruction would cost the
    // recording more than everything else it does. Only collapsed regions
    // need it (`COUNT`).
    const RETIRE: bool = COUNT;
    // Branches, jumps and addresses are all it takes from the
    // instructions, and none of them needs the hart's state at once.
    const HOST_CODE: bool = !COUNT;

    #[inline(always)]
    fn retire(&mut self, ev: &crate::observer::Retired<'_>) {
        if let Some(r) = &mut self.regions {
            r.retired[ev.hart] += 1;
        }
    }

    const BULK_ADDRESSES: bool = true;

    #[inline(never)]
    fn addresses(&mut self, hart: HartId, log: &mut Vec<u64>) {
        // Measured on the measuring thread (`DcacheMeter`): hand the
        // engine's buffer over and give it an empty one.
        if let Some(m) = &mut self.dcaches {
            m.take(hart, log);
        }
    }

    #[inline(always)]
    fn branch(&mut self, hart: HartId, pc: u64, _inst: &Inst, taken: bool, _target: u64) {
        if COUNT {
            if let Some(r) = &mut self.regions {
                let step = r.trackers[hart].branch(pc, taken);
                if self.region_step(hart, step) {
                    return;
                }
            }
        }
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
        if COUNT {
            if let Some(r) = &mut self.regions {
                let t = &mut r.trackers[hart];
                let step = match flow {
                    Flow::Call | Flow::IndirectCall => t.call(target, inst.fallthrough(pc)),
                    Flow::Return => t.ret(target).unwrap_or_else(|strayed| {
                        self.unsupported.get_or_insert_with(|| {
                            format!("a return at {pc:#x} left collapsed region {} for {:#x}, not where the region ends (a longjmp?): record without --aggregate nested/functions", strayed.region, strayed.target)
                        });
                        Step::Inside
                    }),
                    _ if t.inside().is_some() => Step::Inside,
                    _ => Step::Outside,
                };
                if matches!(step, Step::Enter(_)) && flow == Flow::IndirectCall {
                    // The replay learns the callee from the target.
                    self.encoder.indirect(h, pc, target);
                }
                if self.region_step(hart, step) {
                    return;
                }
            }
        }
        self.encode_jump(h, pc, flow, target, inst.fallthrough(pc));
    }

    /// A batch from host code: without aggregated loops (which take
    /// branches by their pc) each branch is a bit straight into the
    /// encoder and each jump its record, with no hook call per event.
    #[inline(never)]
    fn host_exits(&mut self, hart: HartId, exits: &crate::observer::HostExits<'_>) {
        use crate::observer::HostExit;
        if COUNT || self.loops.is_some() {
            return exits.tell(hart, self);
        }
        let h = hart as u16;
        for e in exits.iter() {
            match e {
                HostExit::Branch { taken, .. } => self.encoder.branch(h, taken),
                HostExit::Jump {
                    pc,
                    flow,
                    target,
                    fall,
                    ..
                } => self.encode_jump(h, pc, flow, target, fall),
            }
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
        self.refuse_lossy("a trap in the middle of a partial program");
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
            value: ev.value,
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
        self.refuse_lossy("code written at run time");
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
        &Plan::default(),
    )
}

/// [`record_run_watched`] aggregating as `plan` says (see
/// [`Recorder::aggregate`]; an empty plan: nothing).
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
    plan: &Plan,
) -> Result<Recording, RecordError> {
    let run = RunPlan {
        plan,
        harts: 1,
        schedule: None,
    };
    record_with(
        elf, host, console, max_insns, out, header, dcaches, watcher, run,
    )
}

/// What a recording runs besides the program: its aggregation plan, its
/// harts, and the cores whose clocks schedule them (`None`: the functional
/// engine's fixed turns).
struct RunPlan<'a> {
    plan: &'a Plan,
    harts: usize,
    schedule: Option<Schedule<'a>>,
}

/// Record a run of `elf` on `harts` harts: each hart's branch history and
/// its synchronisation events. With `schedule` (cores and clock
/// frequencies) the harts run in the order of those cores' clocks, exactly as the
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
    schedule: Option<Schedule<'_>>,
) -> Result<Recording, RecordError> {
    let run = RunPlan {
        plan: &Plan::default(),
        harts,
        schedule,
    };
    record_with(
        elf, host, console, max_insns, out, header, dcaches, watcher, run,
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
    run: RunPlan<'_>,
) -> Result<Recording, RecordError> {
    let config = crate::MachineConfig {
        harts: run.harts,
        ..crate::MachineConfig::default()
    };
    let mut machine = crate::Machine::new(elf, &config, host, console)?;
    header.identity = elf.identity();
    header.xlen = elf.xlen.bits() as u8;
    header.harts = run.harts as u16;
    let writer = TraceWriter::new(out, &header)?;
    // Collapsed regions need every instruction counted; everything else
    // records without the per-instruction hook.
    if run.plan.regions.is_empty() {
        let rec = Recorder::<W, false>::new(writer, run.harts);
        record_as(rec, elf, &mut machine, dcaches, run, max_insns, watcher)
    } else {
        let rec = Recorder::<W, true>::new(writer, run.harts);
        record_as(rec, elf, &mut machine, dcaches, run, max_insns, watcher)
    }
}

/// Run `machine` with `rec` (and `watcher`) and finish the trace.
fn record_as<W: Write, O: Observer, const COUNT: bool>(
    mut rec: Recorder<W, COUNT>,
    elf: &retrace_program::Elf,
    machine: &mut crate::Machine,
    dcaches: &[retrace_timing::CacheModel],
    run: RunPlan<'_>,
    max_insns: Option<u64>,
    watcher: &mut O,
) -> Result<Recording, RecordError> {
    if let Ok(code) = retrace_program::Code::from_elf(elf) {
        rec = rec.with_code(code);
    }
    rec.measure_dcaches(dcaches);
    rec.aggregate(run.plan);
    let mut clocked = Vec::new();
    let result = match run.schedule {
        None => machine.run(max_insns, &mut (&mut rec, watcher)),
        Some(schedule) => {
            let mut cores = crate::clocked::ClockedHarts::heterogeneous(schedule.cores, &[])
                .at_frequencies(schedule.hz)
                .reading_code(elf);
            let result = crate::clocked::run_by_clock_watched(
                machine,
                max_insns,
                &mut cores,
                &mut (&mut rec, watcher),
            );
            clocked = cores.times();
            result
        }
    };
    rec.check_end();
    if let Some(why) = rec.unsupported() {
        return Err(RecordError::Unsupported(why.to_string()));
    }
    let exit = match result.stop {
        crate::StopReason::Exit { code } => i64::from(code),
        _ => -1,
    };
    let loops = rec.finish_loops();
    let trace = rec.finish(machine, &result, exit)?;
    Ok(Recording {
        run: result,
        branches: trace.bits,
        trace,
        loops,
        clocked,
    })
}

#[cfg(test)]
mod tests {
    use super::LruStacks;
    use proptest::prelude::*;
    use retrace_timing::{Cache, CacheModel};

    proptest! {
        /// Geometries of one line size and one number of sets measured
        /// together count what each one's own cache counts.
        #[test]
        fn lru_stacks_count_as_each_cache(addrs in prop::collection::vec(0u64..1 << 14, 0..2000)) {
            let geometries = [(1024, 2), (2048, 4), (4096, 8), (512, 1)].map(|(size, ways)| {
                CacheModel { size, ways, line: 64, miss_penalty: 1 }
            });
            let mut stacks = LruStacks::new(&geometries[0]);
            for g in &geometries {
                prop_assert!(stacks.fits(g));
                stacks.ways = stacks.ways.max(g.ways as usize);
            }
            let mut stacks = stacks.ready();
            let mut caches = geometries.map(|g| Cache::new(&g));
            for &a in &addrs {
                stacks.access(a);
                caches.iter_mut().for_each(|c| { c.access(a); });
            }
            for (g, c) in geometries.iter().zip(&caches) {
                let m = stacks.measure(g);
                prop_assert_eq!((m.accesses, m.misses), (c.hits + c.misses, c.misses));
            }
        }
    }
}
