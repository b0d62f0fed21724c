//! Progress of long commands on a terminal, through `indicatif`: a spinner
//! (a run, a recording) or a bar (a replay over the trace's bytes: an
//! estimate, a sweep, a profile) on standard error.
//!
//! Drawn only when standard error is a terminal, so piped and redirected
//! output is exactly the report; and only once a command has run for half
//! a second, so short commands never flash one. Cleared when done: what
//! stays on the screen is the report.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{BufReader, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a command runs before its progress shows.
const DELAY: Duration = Duration::from_millis(500);

/// [`DELAY`], or the milliseconds in `RETRACE_PROGRESS_DELAY_MS` (the
/// tests' way to see a bar on a short run).
fn delay() -> Duration {
    std::env::var("RETRACE_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(DELAY, Duration::from_millis)
}

/// A spinner or bar, hidden until [`delay`] has passed (and for good when
/// standard error is not a terminal). Clones show the same progress, from
/// any thread.
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    delay: Duration,
    /// Whether it may draw (standard error is a terminal).
    terminal: bool,
    /// Whether it draws now.
    shown: Arc<AtomicBool>,
}

impl Progress {
    /// A spinner: `message` (updated with [`Progress::message`]) and the
    /// time elapsed.
    pub fn spinner(message: &str) -> Progress {
        let style =
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template");
        Progress::new(ProgressBar::no_length(), style, message)
    }

    /// A bar to `len` bytes: `message`, bytes done of `len`, rate, time left.
    pub fn bytes(len: u64, message: &str) -> Progress {
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
        )
        .expect("a valid template")
        .progress_chars("=> ");
        Progress::new(ProgressBar::new(len), style, message)
    }

    fn new(bar: ProgressBar, style: ProgressStyle, message: &str) -> Progress {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        bar.set_style(style);
        bar.set_message(message.to_string());
        let progress = Progress {
            bar,
            start: Instant::now(),
            delay: delay(),
            terminal: std::io::stderr().is_terminal(),
            shown: Arc::new(AtomicBool::new(false)),
        };
        // With no delay it shows at once, however rarely the command polls.
        progress.show_when_due();
        progress
    }

    /// Start drawing once the delay has passed.
    #[inline]
    fn show_when_due(&self) {
        if self.terminal
            && !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed() >= self.delay
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar
                .set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
            self.bar.enable_steady_tick(Duration::from_millis(100));
        }
    }

    /// Nothing new to say, but the spinner may show now (its clock runs).
    pub fn poll(&self) {
        self.show_when_due();
    }

    /// Done so far (bytes or items).
    #[inline]
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
        self.show_when_due();
    }

    /// A new message (a spinner's running figures).
    pub fn message(&self, message: String) {
        self.bar.set_message(message);
        self.show_when_due();
    }

    /// Done: clear the line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // The last clone gone (an error, a panic) leaves no bar behind.
        if Arc::strong_count(&self.shown) == 1 {
            self.bar.finish_and_clear();
        }
    }
}

/// A writer that reports the bytes written through it: a recording's
/// trace (put it under the buffer, so it counts once per flush).
pub struct CountingWriter<W> {
    inner: W,
    written: u64,
    progress: Progress,
    what: &'static str,
}

impl<W: Write> CountingWriter<W> {
    /// `inner`, reporting "`what`: N bytes" on `progress`'s spinner.
    pub fn new(inner: W, progress: Progress, what: &'static str) -> CountingWriter<W> {
        CountingWriter {
            inner,
            written: 0,
            progress,
            what,
        }
    }
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        self.progress.message(format!(
            "{}: {} written",
            self.what,
            indicatif::HumanBytes(self.written)
        ));
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A trace file whose readers move a bar: how far the latest one has read.
/// (A replay may pass over the trace more than once, the bar each time.)
pub struct WatchedTrace {
    path: PathBuf,
    progress: Progress,
}

impl WatchedTrace {
    /// `path`, with a bar to its length labelled `message`.
    pub fn new(path: &Path, message: &str) -> WatchedTrace {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        WatchedTrace {
            path: path.to_path_buf(),
            progress: Progress::bytes(len, message),
        }
    }

    /// The trace is read: clear the bar.
    pub fn finish(&self) {
        self.progress.finish();
    }
}

impl retrace_estimate::TraceSource for WatchedTrace {
    type Reader<'a> = BufReader<Watched<std::fs::File>>;
    fn open(&self) -> Result<Self::Reader<'_>, retrace_trace::TraceError> {
        // Under the buffer (the capacity the plain file source uses), so
        // the bar moves once per fill, not once per read.
        Ok(BufReader::with_capacity(
            1 << 16,
            Watched {
                inner: std::fs::File::open(&self.path)?,
                pos: 0,
                progress: self.progress.clone(),
            },
        ))
    }
}

/// The file under a [`WatchedTrace`]'s reader.
pub struct Watched<R> {
    inner: R,
    pos: u64,
    progress: Progress,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        self.progress.set(self.pos);
        Ok(n)
    }
}

impl<R: Seek> Seek for Watched<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.pos = self.inner.seek(to)?;
        Ok(self.pos)
    }
}
