//! RISC-V semihosting: the host services a bare-metal program asks for with
//! the `slli x0,x0,0x1f; ebreak; srai x0,x0,7` sequence (operation number
//! in `a0`, parameter-block address in `a1`, result in `a0`).
//!
//! Every operation picolibc's `libsemihost` uses is implemented, with QEMU's
//! results wherever a program can observe them (file-handle numbering from 1,
//! the `:tt` console and `:semihosting-features` pseudo-files, the heap
//! layout of `SYS_HEAPINFO`, `SYS_EXIT` on RV32 vs RV64, `E2BIG` from a too
//! small `SYS_GET_CMDLINE` buffer), so programs print the same under both.
//!
//! Two deliberate differences:
//! - **Host files** are reachable only under the directories of
//!   [`HostConfig::allow_dirs`]. Paths are canonicalised (so `..` and
//!   symbolic links that lead out are seen for what they are); anything
//!   outside stops the run with [`crate::StopReason::Denied`]. `SYS_SYSTEM`
//!   is always refused the same way.
//! - **Time** (`SYS_CLOCK`, `SYS_TIME`, `SYS_ELAPSED`) is by default a
//!   function of the retired-instruction count: a virtual 1 GHz clock at one
//!   instruction per cycle, starting at the Unix epoch. A recorded run must
//!   replay exactly, and a program that reads the host clock (to seed a
//!   generator, or to time itself and print the result) would otherwise take
//!   different paths on every run. [`HostConfig::host_time`] switches to the
//!   host's clocks for programs that really want them.

use crate::memory::Memory;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// Semihosting operation numbers.
pub mod op {
    /// Open a file.
    pub const OPEN: u64 = 0x01;
    /// Close a handle.
    pub const CLOSE: u64 = 0x02;
    /// Write one character to the console.
    pub const WRITEC: u64 = 0x03;
    /// Write a NUL-terminated string to the console.
    pub const WRITE0: u64 = 0x04;
    /// Write to a handle.
    pub const WRITE: u64 = 0x05;
    /// Read from a handle.
    pub const READ: u64 = 0x06;
    /// Read one character from the console.
    pub const READC: u64 = 0x07;
    /// Is a status an error?
    pub const ISERROR: u64 = 0x08;
    /// Is a handle a terminal?
    pub const ISTTY: u64 = 0x09;
    /// Seek.
    pub const SEEK: u64 = 0x0a;
    /// File length.
    pub const FLEN: u64 = 0x0c;
    /// Temporary file name.
    pub const TMPNAM: u64 = 0x0d;
    /// Remove a file.
    pub const REMOVE: u64 = 0x0e;
    /// Rename a file.
    pub const RENAME: u64 = 0x0f;
    /// Centiseconds since start.
    pub const CLOCK: u64 = 0x10;
    /// Seconds since the epoch.
    pub const TIME: u64 = 0x11;
    /// Run a host command (always refused).
    pub const SYSTEM: u64 = 0x12;
    /// Last error number.
    pub const ERRNO: u64 = 0x13;
    /// Command line.
    pub const GET_CMDLINE: u64 = 0x15;
    /// Heap and stack placement.
    pub const HEAPINFO: u64 = 0x16;
    /// Exit.
    pub const EXIT: u64 = 0x18;
    /// Exit with a status code (all XLENs).
    pub const EXIT_EXTENDED: u64 = 0x20;
    /// Ticks since start.
    pub const ELAPSED: u64 = 0x30;
    /// Tick frequency.
    pub const TICKFREQ: u64 = 0x31;
}

/// `ADP_Stopped_ApplicationExit`: the "normal exit" reason of `SYS_EXIT`.
const APPLICATION_EXIT: u64 = 0x20026;
/// Contents of the `:semihosting-features` file: magic, then feature byte 0
/// with `SH_EXT_EXIT_EXTENDED` and `SH_EXT_STDOUT_STDERR`, as QEMU has.
const FEATURES: &[u8] = b"SHFB\x03";
/// Virtual clock rate: one instruction per cycle at 1 GHz.
const VIRTUAL_HZ: u64 = 1_000_000_000;

const EBADF: u64 = 9;
const EFAULT: u64 = 14;
const EINVAL: u64 = 22;
const E2BIG: u64 = 7;
const EIO: u64 = 5;
const ENOTTY: u64 = 25;
const ESPIPE: u64 = 29;
const ENOENT: u64 = 2;

/// The program's console: where semihosting console I/O goes.
pub struct Console {
    /// Standard output (`:tt` opened for writing, `SYS_WRITEC`, `SYS_WRITE0`).
    pub stdout: Box<dyn Write + Send>,
    /// Standard error (`:tt` opened for appending).
    pub stderr: Box<dyn Write + Send>,
    /// Standard input (`:tt` opened for reading, `SYS_READC`).
    pub stdin: Box<dyn Read + Send>,
    /// What `SYS_ISTTY` answers for stdin, stdout, stderr.
    pub is_tty: [bool; 3],
}

impl Console {
    /// A console that discards output and reads end-of-file.
    pub fn null() -> Console {
        Console {
            stdout: Box::new(std::io::sink()),
            stderr: Box::new(std::io::sink()),
            stdin: Box::new(std::io::empty()),
            is_tty: [false; 3],
        }
    }
}

/// How the program may reach the host.
#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    /// The command line `SYS_GET_CMDLINE` returns. See
    /// [`HostConfig::qemu_cmdline`] for QEMU's rule.
    pub cmdline: String,
    /// Directories (canonical paths) under which host files may be opened,
    /// created, removed or renamed. Empty: no host file access at all.
    pub allow_dirs: Vec<PathBuf>,
    /// Use the host's clocks for `SYS_CLOCK`/`SYS_TIME`/`SYS_ELAPSED`
    /// instead of the deterministic virtual clock.
    pub host_time: bool,
}

impl HostConfig {
    /// The command line QEMU gives a program run as `-kernel PROGRAM
    /// -semihosting-config enable=on,arg=A,arg=B…`: the arguments joined by
    /// spaces, or, when there are none, the program path as given (QEMU's
    /// fallback to the `-kernel` file name). picolibc's start-up code then
    /// makes `argv[0]` "program-name" and splits this line at spaces.
    pub fn qemu_cmdline(program: &str, args: &[String]) -> String {
        if args.is_empty() {
            program.to_string()
        } else {
            args.join(" ")
        }
    }
}

enum Handle {
    Stdin,
    Stdout,
    Stderr,
    Features { pos: usize },
    File(File),
}

/// The result of one semihosting request.
pub(crate) enum Outcome {
    /// Put this in `a0` and continue.
    Return(u64),
    /// The program exited.
    Exit(u32),
    /// A request the configuration does not allow (message names it).
    Denied(String),
    /// An operation number retrace does not implement.
    Unsupported(u64),
}

/// Semihosting state of a machine: configuration, console, open handles.
pub(crate) struct Semihost {
    pub config: HostConfig,
    pub console: Console,
    handles: Vec<Option<Handle>>,
    errno: u64,
    start: Instant,
    pub heap: [u64; 4],
}

/// Parameter-block access with the XLEN's word size.
struct Args<'m> {
    mem: &'m mut Memory,
    block: u64,
    wide: bool,
}

impl Args<'_> {
    fn word_size(&self) -> u64 {
        if self.wide {
            8
        } else {
            4
        }
    }
    fn get(&self, i: u64) -> Option<u64> {
        let a = self.block.wrapping_add(i * self.word_size());
        if self.wide {
            self.mem.read::<8>(a).map(u64::from_le_bytes)
        } else {
            self.mem
                .read::<4>(a)
                .map(|b| u64::from(u32::from_le_bytes(b)))
        }
    }
    fn set_at(&mut self, addr: u64, v: u64) -> bool {
        if self.wide {
            self.mem.write_bytes(addr, &v.to_le_bytes())
        } else {
            self.mem.write_bytes(addr, &(v as u32).to_le_bytes())
        }
    }
    fn string(&self, addr: u64) -> Option<String> {
        let mut out = Vec::new();
        let mut a = addr;
        loop {
            let [b] = self.mem.read::<1>(a)?;
            if b == 0 {
                return Some(String::from_utf8_lossy(&out).into_owned());
            }
            out.push(b);
            if out.len() > 4096 {
                return None;
            }
            a = a.wrapping_add(1);
        }
    }
}

/// `-1` as the program sees it (the engine sign-extends 32-bit values).
const MINUS_ONE: u64 = u64::MAX;

impl Semihost {
    pub fn new(config: HostConfig, console: Console, heap: [u64; 4]) -> Semihost {
        Semihost {
            config,
            console,
            handles: Vec::new(),
            errno: 0,
            start: Instant::now(),
            heap,
        }
    }

    /// Flush console output (at the end of a run).
    pub fn flush(&mut self) {
        let _ = self.console.stdout.flush();
        let _ = self.console.stderr.flush();
    }

    fn fail(&mut self, errno: u64) -> Outcome {
        self.errno = errno;
        Outcome::Return(MINUS_ONE)
    }

    fn io_fail(&mut self, e: &std::io::Error) -> Outcome {
        let errno = e.raw_os_error().map_or(EIO, |n| n as u64);
        self.fail(errno)
    }

    fn alloc(&mut self, h: Handle) -> u64 {
        // Handles start at 1, as QEMU's do: 0 is not a valid handle.
        if let Some(i) = self.handles.iter().skip(1).position(Option::is_none) {
            self.handles[i + 1] = Some(h);
            return (i + 1) as u64;
        }
        if self.handles.is_empty() {
            self.handles.push(None);
        }
        self.handles.push(Some(h));
        (self.handles.len() - 1) as u64
    }

    fn handle(&mut self, fd: u64) -> Option<&mut Handle> {
        self.handles.get_mut(usize::try_from(fd).ok()?)?.as_mut()
    }

    /// Where host path `path` (as the program gave it) really is, if it lies
    /// under an allowed directory; otherwise the denial message.
    fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let denied = || {
            if self.config.allow_dirs.is_empty() {
                format!("the program asked for host file {path:?}, and no directory is allowed")
            } else {
                format!("the program asked for host file {path:?}, outside the allowed directories")
            }
        };
        let p = Path::new(path);
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().map_err(|_| denied())?.join(p)
        };
        let canon = match abs.canonicalize() {
            Ok(c) => c,
            Err(_) => {
                // A file that does not exist yet: its directory must exist
                // and be allowed, its name must be a plain name, and it must
                // not be a dangling symbolic link (opening that would create
                // the link's target, wherever it points).
                if abs.symlink_metadata().is_ok() {
                    return Err(denied());
                }
                let name = match abs.components().next_back() {
                    Some(Component::Normal(n)) => n.to_owned(),
                    _ => return Err(denied()),
                };
                let parent = abs.parent().ok_or_else(denied)?;
                match parent.canonicalize() {
                    Ok(dir) => dir.join(name),
                    // The directory does not exist: deny if it would be
                    // outside even lexically, otherwise report "not found".
                    Err(_) => {
                        let lexical = lexical_normalise(&abs);
                        if self.allowed(&lexical) {
                            return Ok(lexical);
                        }
                        return Err(denied());
                    }
                }
            }
        };
        if self.allowed(&canon) {
            Ok(canon)
        } else {
            Err(denied())
        }
    }

    fn allowed(&self, p: &Path) -> bool {
        self.config.allow_dirs.iter().any(|d| p.starts_with(d))
    }

    fn now_ticks(&self, instret: u64) -> u64 {
        if self.config.host_time {
            self.start.elapsed().as_nanos() as u64
        } else {
            instret
        }
    }

    /// Perform request `op` with parameter block `a1`.
    pub fn call(
        &mut self,
        op: u64,
        a1: u64,
        mem: &mut Memory,
        wide: bool,
        instret: u64,
    ) -> Outcome {
        let mut args = Args {
            mem,
            block: a1,
            wide,
        };
        macro_rules! arg {
            ($i:expr) => {
                match args.get($i) {
                    Some(v) => v,
                    None => return self.fail(EFAULT),
                }
            };
        }
        match op {
            op::OPEN => {
                let (name, mode) = (arg!(0), arg!(1));
                let Some(name) = args.string(name) else {
                    return self.fail(EFAULT);
                };
                if mode > 11 {
                    return self.fail(EINVAL);
                }
                if name == ":tt" {
                    let h = match mode {
                        0..=3 => Handle::Stdin,
                        4..=7 => Handle::Stdout,
                        _ => Handle::Stderr,
                    };
                    return Outcome::Return(self.alloc(h));
                }
                if name == ":semihosting-features" {
                    if mode >= 4 {
                        return self.fail(EINVAL);
                    }
                    return Outcome::Return(self.alloc(Handle::Features { pos: 0 }));
                }
                let path = match self.resolve(&name) {
                    Ok(p) => p,
                    Err(msg) => return Outcome::Denied(msg),
                };
                let mut o = OpenOptions::new();
                // ISO C fopen modes: r rb r+ r+b w wb w+ w+b a ab a+ a+b.
                match mode / 4 {
                    0 => o.read(true).write(mode & 2 != 0),
                    1 => o
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .read(mode & 2 != 0),
                    _ => o.append(true).create(true).read(mode & 2 != 0),
                };
                match o.open(&path) {
                    Ok(f) => Outcome::Return(self.alloc(Handle::File(f))),
                    Err(e) => self.io_fail(&e),
                }
            }
            op::CLOSE => {
                let fd = arg!(0);
                match self.handles.get_mut(fd as usize) {
                    Some(slot @ Some(_)) => {
                        *slot = None;
                        Outcome::Return(0)
                    }
                    _ => self.fail(EBADF),
                }
            }
            op::WRITEC => {
                let Some([c]) = args.mem.read::<1>(a1) else {
                    return self.fail(EFAULT);
                };
                let _ = self.console.stdout.write_all(&[c]);
                Outcome::Return(0)
            }
            op::WRITE0 => {
                let Some(s) = args.string(a1) else {
                    return self.fail(EFAULT);
                };
                let _ = self.console.stdout.write_all(s.as_bytes());
                Outcome::Return(0)
            }
            op::WRITE => {
                let (fd, buf, len) = (arg!(0), arg!(1), arg!(2));
                let Some(bytes) = args.mem.slice(buf, len) else {
                    return self.fail(EFAULT);
                };
                let written = match self.handles.get_mut(fd as usize).and_then(Option::as_mut) {
                    Some(Handle::Stdout) => {
                        let r = self.console.stdout.write_all(bytes);
                        r.map(|()| bytes.len())
                    }
                    Some(Handle::Stderr) => {
                        // Keep the two streams in order on a shared terminal.
                        let _ = self.console.stdout.flush();
                        let r = self.console.stderr.write_all(bytes);
                        let _ = self.console.stderr.flush();
                        r.map(|()| bytes.len())
                    }
                    Some(Handle::File(f)) => f.write_all(bytes).map(|()| bytes.len()),
                    Some(Handle::Stdin | Handle::Features { .. }) => return self.fail(EBADF),
                    None => return self.fail(EBADF),
                };
                match written {
                    Ok(n) => Outcome::Return(len - n as u64),
                    Err(e) => self.io_fail(&e),
                }
            }
            op::READ => {
                let (fd, buf, len) = (arg!(0), arg!(1), arg!(2));
                if !args.mem.contains(buf, len) {
                    return self.fail(EFAULT);
                }
                let mut tmp = vec![0u8; len.min(1 << 24) as usize];
                let got = match self.handle(fd) {
                    Some(Handle::Features { pos }) => {
                        let rest = &FEATURES[(*pos).min(FEATURES.len())..];
                        let n = rest.len().min(tmp.len());
                        tmp[..n].copy_from_slice(&rest[..n]);
                        *pos += n;
                        Ok(n)
                    }
                    Some(Handle::File(f)) => f.read(&mut tmp),
                    Some(Handle::Stdin) => {
                        let _ = self.console.stdout.flush();
                        self.console.stdin.read(&mut tmp)
                    }
                    Some(Handle::Stdout | Handle::Stderr) | None => return self.fail(EBADF),
                };
                match got {
                    Ok(n) => {
                        args.mem.write_bytes(buf, &tmp[..n]);
                        Outcome::Return(len - n as u64)
                    }
                    Err(e) => self.io_fail(&e),
                }
            }
            op::READC => {
                let _ = self.console.stdout.flush();
                let mut c = [0u8];
                match self.console.stdin.read(&mut c) {
                    Ok(1) => Outcome::Return(u64::from(c[0])),
                    _ => Outcome::Return(MINUS_ONE),
                }
            }
            op::ISERROR => {
                let v = arg!(0);
                let negative = if wide { (v as i64) < 0 } else { (v as i32) < 0 };
                Outcome::Return(u64::from(negative))
            }
            op::ISTTY => {
                let fd = arg!(0);
                let tty = self.console.is_tty;
                match self.handle(fd) {
                    Some(Handle::Stdin) => Outcome::Return(u64::from(tty[0])),
                    Some(Handle::Stdout) => Outcome::Return(u64::from(tty[1])),
                    Some(Handle::Stderr) => Outcome::Return(u64::from(tty[2])),
                    Some(_) => {
                        self.errno = ENOTTY;
                        Outcome::Return(0)
                    }
                    None => self.fail(EBADF),
                }
            }
            op::SEEK => {
                let (fd, pos) = (arg!(0), arg!(1));
                match self.handle(fd) {
                    Some(Handle::File(f)) => match f.seek(SeekFrom::Start(pos)) {
                        Ok(_) => Outcome::Return(0),
                        Err(e) => self.io_fail(&e),
                    },
                    Some(Handle::Features { pos: p }) => {
                        *p = pos as usize;
                        Outcome::Return(0)
                    }
                    Some(_) => self.fail(ESPIPE),
                    None => self.fail(EBADF),
                }
            }
            op::FLEN => {
                let fd = arg!(0);
                match self.handle(fd) {
                    Some(Handle::File(f)) => match f.metadata() {
                        Ok(m) => Outcome::Return(m.len()),
                        Err(e) => self.io_fail(&e),
                    },
                    Some(Handle::Features { .. }) => Outcome::Return(FEATURES.len() as u64),
                    Some(_) => Outcome::Return(0),
                    None => self.fail(EBADF),
                }
            }
            op::TMPNAM => {
                let (buf, id, len) = (arg!(0), arg!(1), arg!(2));
                let Some(dir) = self.config.allow_dirs.first() else {
                    return self.fail(ENOENT);
                };
                let name = format!("{}/retrace-tmp-{:02x}", dir.display(), id & 0xff);
                if name.len() as u64 + 1 > len {
                    return self.fail(EINVAL);
                }
                let mut bytes = name.into_bytes();
                bytes.push(0);
                if !args.mem.write_bytes(buf, &bytes) {
                    return self.fail(EFAULT);
                }
                Outcome::Return(0)
            }
            op::REMOVE => {
                let Some(name) = args.string(arg!(0)) else {
                    return self.fail(EFAULT);
                };
                match self.resolve(&name) {
                    Ok(p) => match std::fs::remove_file(p) {
                        Ok(()) => Outcome::Return(0),
                        Err(e) => self.io_fail(&e),
                    },
                    Err(msg) => Outcome::Denied(msg),
                }
            }
            op::RENAME => {
                let (Some(from), Some(to)) = (args.string(arg!(0)), args.string(arg!(2))) else {
                    return self.fail(EFAULT);
                };
                let from = match self.resolve(&from) {
                    Ok(p) => p,
                    Err(msg) => return Outcome::Denied(msg),
                };
                let to = match self.resolve(&to) {
                    Ok(p) => p,
                    Err(msg) => return Outcome::Denied(msg),
                };
                match std::fs::rename(from, to) {
                    Ok(()) => Outcome::Return(0),
                    Err(e) => self.io_fail(&e),
                }
            }
            op::CLOCK => Outcome::Return(self.now_ticks(instret) / (VIRTUAL_HZ / 100)),
            op::TIME => {
                if self.config.host_time {
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    Outcome::Return(t)
                } else {
                    Outcome::Return(instret / VIRTUAL_HZ)
                }
            }
            op::SYSTEM => {
                let cmd = arg!(0);
                let cmd = args.string(cmd).unwrap_or_default();
                Outcome::Denied(format!(
                    "the program asked to run host command {cmd:?} (SYS_SYSTEM), which retrace never allows"
                ))
            }
            op::ERRNO => Outcome::Return(self.errno),
            op::GET_CMDLINE => {
                let (buf, size) = (arg!(0), arg!(1));
                let line = self.config.cmdline.as_bytes();
                if line.len() as u64 + 1 > size {
                    return self.fail(E2BIG);
                }
                let mut bytes = line.to_vec();
                bytes.push(0);
                let len_at = a1.wrapping_add(args.word_size());
                if !args.mem.write_bytes(buf, &bytes) || !args.set_at(len_at, line.len() as u64) {
                    return self.fail(EFAULT);
                }
                Outcome::Return(0)
            }
            op::HEAPINFO => {
                let block = arg!(0);
                let size = args.word_size();
                for (i, v) in self.heap.iter().enumerate() {
                    if !args.set_at(block.wrapping_add(i as u64 * size), *v) {
                        return self.fail(EFAULT);
                    }
                }
                Outcome::Return(0)
            }
            op::EXIT | op::EXIT_EXTENDED => {
                // RV64 SYS_EXIT and every SYS_EXIT_EXTENDED take a block
                // (reason, subcode); RV32 SYS_EXIT passes the reason in a1
                // and cannot give a status (QEMU: 0 for a normal exit).
                let code = if op == op::EXIT_EXTENDED || wide {
                    let (reason, sub) = (arg!(0), arg!(1));
                    if reason == APPLICATION_EXIT {
                        sub as u32
                    } else {
                        1
                    }
                } else {
                    u32::from(a1 != APPLICATION_EXIT)
                };
                Outcome::Exit(code)
            }
            op::ELAPSED => {
                let t = self.now_ticks(instret);
                let ok = if wide {
                    args.set_at(a1, t)
                } else {
                    args.set_at(a1, t & 0xffff_ffff) && args.set_at(a1.wrapping_add(4), t >> 32)
                };
                if ok {
                    Outcome::Return(0)
                } else {
                    self.fail(EFAULT)
                }
            }
            op::TICKFREQ => Outcome::Return(VIRTUAL_HZ),
            other => Outcome::Unsupported(other),
        }
    }
}

/// `a/./b/../c` → `a/c`, without touching the file system.
fn lexical_normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(dirs: Vec<PathBuf>) -> Semihost {
        Semihost::new(
            HostConfig {
                cmdline: "prog a b".into(),
                allow_dirs: dirs,
                host_time: false,
            },
            Console::null(),
            [0; 4],
        )
    }

    #[test]
    fn qemu_command_line_rule() {
        assert_eq!(HostConfig::qemu_cmdline("p.elf", &[]), "p.elf");
        assert_eq!(
            HostConfig::qemu_cmdline("p.elf", &["1".into(), "x y".into()]),
            "1 x y"
        );
    }

    #[test]
    fn paths_outside_allowed_dirs_are_denied() {
        let dir = std::env::temp_dir().join(format!("retrace-sh-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let dir = dir.canonicalize().unwrap();
        let h = host(vec![dir.clone()]);
        assert!(h.resolve(dir.join("sub/new.txt").to_str().unwrap()).is_ok());
        assert!(h.resolve(dir.join("sub/../x").to_str().unwrap()).is_ok());
        assert!(h.resolve(dir.join("../escape").to_str().unwrap()).is_err());
        assert!(h.resolve("/etc/passwd").is_err());
        assert!(h
            .resolve(dir.join("nodir/../../x").to_str().unwrap())
            .is_err());
        #[cfg(unix)]
        {
            let link = dir.join("out");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("/etc", &link).unwrap();
            assert!(h.resolve(link.join("passwd").to_str().unwrap()).is_err());
            let dangling = dir.join("dangling");
            let _ = std::fs::remove_file(&dangling);
            std::os::unix::fs::symlink("/nonexistent-retrace/x", &dangling).unwrap();
            assert!(h.resolve(dangling.to_str().unwrap()).is_err());
        }
        assert!(host(vec![])
            .resolve(dir.join("x").to_str().unwrap())
            .is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn handles_start_at_one_and_are_reused() {
        let mut h = host(vec![]);
        assert_eq!(h.alloc(Handle::Stdout), 1);
        assert_eq!(h.alloc(Handle::Stdin), 2);
        h.handles[1] = None;
        assert_eq!(h.alloc(Handle::Stderr), 1);
        assert_eq!(h.alloc(Handle::Features { pos: 0 }), 3);
    }
}
