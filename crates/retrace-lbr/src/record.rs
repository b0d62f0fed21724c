//! One recorded run: buffer, control thread, sampler and writer process,
//! started in that order and checked at the end (both sides' pair counts
//! must agree).

use crate::control::{self, ControlOptions, Mode};
use crate::recording::{fnv_hex, ChainCount, Counts, Method, PairCount, Recording, Sampling};
use crate::ring::{self, Ring, WriterState, ADDR_MASK};
use crate::runtime::MARKER_SYMBOL;
use crate::sample::Sampler;
use crate::Error;
use object::{Object, ObjectSymbol};
use rustc_hash::FxHashMap;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What to run and how.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The writer program.
    pub writer: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Exact counting or code blocks.
    pub mode: Mode,
    /// Sampling period in nanoseconds (code blocks only).
    pub period_ns: u64,
    /// Buffer slots, log2.
    pub capacity_log2: u32,
    /// Most distinct pairs.
    pub max_blocks: usize,
    /// The control thread sleeps this long after each batch (tests).
    pub throttle: Option<Duration>,
    /// CPUs for the writer and the control thread; `None` picks the first
    /// and last allowed CPUs when there are two or more.
    pub cpus: Option<(usize, usize)>,
    /// Count each pair with the sites before it too (exact mode only):
    /// what mapping onto an analysed program uses to split a writer branch
    /// among the analysed build's copies of it. Costs the control program
    /// a wider hash key per pair.
    pub chains: bool,
}

impl RecordOptions {
    /// Defaults: 2^16 slots, 20 kHz sampling, up to 2^22 blocks.
    pub fn new(writer: PathBuf, args: Vec<OsString>, mode: Mode) -> RecordOptions {
        RecordOptions {
            writer,
            args,
            mode,
            period_ns: 50_000,
            capacity_log2: 16,
            max_blocks: 1 << 22,
            throttle: None,
            cpus: None,
            chains: false,
        }
    }
}

/// The file address of the runtime's marker symbol in `writer`, or why
/// `writer` is no writer.
pub fn check_writer(writer: &Path) -> Result<(u64, String), Error> {
    let bytes = std::fs::read(writer).map_err(|e| Error::io(writer, e))?;
    let file = object::File::parse(&*bytes).map_err(|_| {
        Error::BadInput(format!(
            "{} is not an ELF executable; give a writer built with `retrace lbr cc -- <compiler command>`",
            writer.display()
        ))
    })?;
    let marker = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(MARKER_SYMBOL))
        .map(|s| s.address());
    match marker {
        Some(addr) => Ok((addr, fnv_hex(&bytes))),
        None => Err(Error::NotWriter(format!(
            "{} has no retrace lbr runtime (symbol {MARKER_SYMBOL} missing); build it with `retrace lbr cc -- <compiler command>`",
            writer.display()
        ))),
    }
}

fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; the call fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

fn pin(cpu: usize) {
    // SAFETY: as above; failure only means the thread is not pinned.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Run the writer under a control thread and return what was recorded.
pub fn record(opts: &RecordOptions) -> Result<Recording, Error> {
    let (marker, writer_hash) = check_writer(&opts.writer)?;
    let ring = Ring::create(opts.capacity_log2)?;
    let cpus = opts.cpus.or_else(|| {
        let cpus = allowed_cpus();
        (cpus.len() >= 2).then(|| (cpus[0], cpus[cpus.len() - 1]))
    });
    let sampled = matches!(opts.mode, Mode::Blocks { .. });
    let gone = AtomicBool::new(false);
    let chains = opts.chains && matches!(opts.mode, Mode::Exact);
    // Counting chains, the control program also follows the writer's calls
    // and returns, which it needs the writer's functions for.
    let functions = if chains {
        Some(control::Functions::new(
            &crate::disasm::Code::load(&opts.writer)?,
            marker,
        ))
    } else {
        None
    };
    let copts = ControlOptions {
        mode: opts.mode,
        max_blocks: opts.max_blocks,
        throttle: opts.throttle,
        chains,
        functions: functions.as_ref(),
    };
    let started = Instant::now();
    let mut histogram: FxHashMap<u64, u64> = FxHashMap::default();
    let mut samples = 0u64;
    let mut lost = 0u64;
    let mut region = None;

    let (consumed, exit) = std::thread::scope(|s| -> Result<_, Error> {
        let (tx, rx) = mpsc::channel();
        let ring = &ring;
        let gone = &gone;
        let copts = &copts;
        let control = s.spawn(move || {
            if let Some((_, c)) = cpus {
                pin(c);
            }
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            control::consume(ring, copts, gone, |region| {
                let _ = tx.send((tid, region));
            })
        });
        let (tid, reg) = match rx.recv() {
            Ok(v) => v,
            Err(_) => {
                gone.store(true, Ordering::Release);
                return Err(control.join().expect("control thread").err().unwrap_or(
                    Error::Config("the control thread stopped before starting".into()),
                ));
            }
        };
        region = reg;
        let sampler = if sampled {
            match Sampler::open(tid, opts.period_ns) {
                Ok(sm) => Some(sm),
                Err(e) => {
                    gone.store(true, Ordering::Release);
                    let _ = control.join();
                    return Err(e);
                }
            }
        } else {
            None
        };
        let mut cmd = std::process::Command::new(&opts.writer);
        cmd.args(&opts.args)
            .env("RETRACE_LBR_FD", ring.fd().as_raw_fd().to_string());
        if let Some((w, _)) = cpus {
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    pin(w);
                    Ok(())
                });
            }
        }
        let child = cmd.spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                gone.store(true, Ordering::Release);
                let _ = control.join();
                return Err(Error::io(&opts.writer, e));
            }
        };
        if let Some(sm) = &sampler {
            sm.enable();
        }
        let mut take = |sm: &mut Sampler| {
            sm.drain(|ip| {
                samples += 1;
                *histogram.entry(ip).or_insert(0) += 1;
            })
        };
        let mut sampler = sampler;
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) => {}
                Err(e) => {
                    gone.store(true, Ordering::Release);
                    let _ = control.join();
                    return Err(Error::io(&opts.writer, e));
                }
            }
            if let Some(sm) = sampler.as_mut() {
                take(sm);
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        gone.store(true, Ordering::Release);
        let consumed = control.join().expect("the control thread does not panic")?;
        if let Some(sm) = sampler.as_mut() {
            sm.disable();
            take(sm);
            lost = sm.lost;
        }
        let exit = status
            .code()
            .unwrap_or_else(|| -status.signal().unwrap_or(0));
        Ok((consumed, exit))
    })?;
    let seconds = started.elapsed().as_secs_f64();

    let report = ring.writer_report();
    if report.state == WriterState::NotAttached {
        return Err(Error::NotWriter(format!(
            "{} ran but its runtime never attached to the buffer (exit {exit}); rebuild it with `retrace lbr cc -- <compiler command>`",
            opts.writer.display()
        )));
    }
    let finished = report.state == WriterState::Finished;
    if finished && report.pairs != consumed.pairs {
        return Err(Error::Lost(format!(
            "pair counts differ: the writer wrote {} and the control program read {}",
            report.pairs, consumed.pairs
        )));
    }
    if finished && report.values != consumed.values {
        return Err(Error::Lost(format!(
            "switch-value counts differ: the writer wrote {} and the control program read {}",
            report.values, consumed.values
        )));
    }
    let bias = report.load_ref.wrapping_sub(marker);
    let relations = |f: u64| Some((f >> ring::REL_SHIFT) as u16).filter(|&r| r != 0);
    let file = |a: u64| if a == 0 { 0 } else { a.wrapping_sub(bias) };
    let counts = Counts {
        writer_pairs: if finished { report.pairs } else { 0 },
        reader_pairs: consumed.pairs,
        writer_values: if finished { report.values } else { 0 },
        reader_values: consumed.values,
        writer_waits: report.waits,
        foreign_calls: report.foreign_calls,
        late_calls: report.late_calls,
        writer_finished: finished,
    };
    let mut pairs: Vec<PairCount>;
    let mut sampling = None;
    if let Some((base, len)) = region.filter(|_| sampled) {
        let mut per_block = vec![0u64; consumed.blocks.len()];
        let mut in_blocks = 0;
        for (&ip, &n) in &histogram {
            let off = ip.wrapping_sub(base) % control::BLOCK_BYTES as u64;
            if ip >= base && ip < base + len && control::COUNTED.contains(&off) {
                let b = ((ip - base) / control::BLOCK_BYTES as u64) as usize;
                if let Some(slot) = per_block.get_mut(b) {
                    *slot += n;
                    in_blocks += n;
                }
            }
        }
        // Every block costs the same, so a pair's share of block samples
        // is its share of pairs.
        let scale = if in_blocks > 0 {
            consumed.pairs as f64 / in_blocks as f64
        } else {
            0.0
        };
        pairs = consumed
            .blocks
            .iter()
            .zip(&per_block)
            .map(|(&(f, t, v), &n)| PairCount {
                from: file(f & ADDR_MASK),
                to: file(t),
                value: v,
                relations: relations(f),
                count: ((n as f64 * scale).round() as u64).max(1),
                exact: consumed.exact.get(&(f, t, v)).copied(),
                samples: Some(n),
            })
            .collect();
        sampling = Some(Sampling {
            period_ns: opts.period_ns,
            samples,
            in_blocks,
            lost,
            blocks: consumed.blocks.len() as u64,
        });
    } else {
        pairs = consumed
            .exact
            .iter()
            .map(|(&(f, t, v), &n)| PairCount {
                from: file(f & ADDR_MASK),
                to: file(t),
                value: v,
                relations: relations(f),
                count: n,
                exact: None,
                samples: None,
            })
            .collect();
    }
    pairs.sort_by_key(|p| (p.from, p.to, p.value, p.relations));
    let mut chains: Vec<ChainCount> = if sampled {
        Vec::new()
    } else {
        consumed
            .chains
            .iter()
            .map(|(&(b, f, t, c), &n)| ChainCount {
                before: b.iter().map(|&b| file(b)).collect(),
                from: file(f),
                to: file(t),
                count: n,
                caller: file(c),
            })
            .collect()
    };
    chains.sort_by(|x, y| {
        (x.from, x.to, &x.before, x.caller).cmp(&(y.from, y.to, &y.before, y.caller))
    });
    Ok(Recording {
        writer: opts.writer.display().to_string(),
        writer_hash,
        analysed: None,
        analysed_hash: None,
        args: opts
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        method: if sampled {
            Method::Sampled
        } else {
            Method::Exact
        },
        load_bias: bias,
        exit,
        seconds,
        counts,
        sampling,
        pairs,
        chains,
    })
}
