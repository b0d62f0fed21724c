//! Where the test inputs are: the repository root, the example programs in
//! `programs/bin/` and any directory of ELF files, found by listing the
//! directory (never a hand-kept list, so a new program is tested the day
//! it is committed).

use std::io::Read;
use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The directory holding SQLite's amalgamation (`sqlite3.c`): the
/// `libsqlite3-sys` package cargo downloaded for this workspace (a
/// dev-dependency), found through `cargo metadata` so no registry path is
/// guessed; `None` (the caller skips) if it is not there. For this host's
/// platform only: the packages of other platforms' dependencies (a
/// WebAssembly clock behind the progress bars) are never downloaded, and
/// offline `cargo metadata` would need their manifests.
pub fn sqlite_source() -> Option<PathBuf> {
    use std::process::Command;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc).arg("-vV").output().ok()?;
    let host = String::from_utf8_lossy(&version.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))?;
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(root())
        .output()
        .ok()?;
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    meta["packages"]
        .as_array()?
        .iter()
        .filter(|p| p["name"] == "libsqlite3-sys")
        .filter_map(|p| Path::new(p["manifest_path"].as_str()?).parent())
        .map(|d| d.join("sqlite3"))
        .find(|d| d.join("sqlite3.c").is_file())
}

/// `programs/bin/`, the committed example programs.
pub fn program_dir() -> PathBuf {
    root().join("programs/bin")
}

/// One example ELF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExampleProgram {
    /// Its path.
    pub path: PathBuf,
    /// File name without `.elf`, e.g. `sort-rv32-O2`: the name trials use.
    pub name: String,
    /// 32 or 64, from the ELF header.
    pub xlen: u32,
}

impl ExampleProgram {
    /// The file name, e.g. `sort-rv32-O2.elf`.
    pub fn file_name(&self) -> String {
        file_name(&self.path)
    }

    /// The program without build variant: `sort-rv32-O2` → `sort`.
    pub fn base_name(&self) -> &str {
        self.name.split("-rv").next().unwrap_or(&self.name)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
    }
}

/// Every program in `programs/bin/`, sorted by name. Panics when there are
/// fewer than ten: a partial checkout would make the sweeps pass on a
/// fraction of what they promise.
pub fn example_programs() -> Vec<ExampleProgram> {
    let progs = programs_in(&program_dir());
    assert!(
        progs.len() >= 10,
        "only {} programs in {}",
        progs.len(),
        program_dir().display()
    );
    progs
}

/// The example program called `name` (with or without `.elf`).
pub fn example_program(name: &str) -> ExampleProgram {
    let name = name.strip_suffix(".elf").unwrap_or(name);
    example_programs()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no {name}.elf in {}", program_dir().display()))
}

/// Every `*.elf` in `dir` as an [`ExampleProgram`], sorted by name.
pub fn programs_in(dir: &Path) -> Vec<ExampleProgram> {
    elf_files(dir)
        .into_iter()
        .map(|path| ExampleProgram {
            name: file_name(&path).trim_end_matches(".elf").to_string(),
            xlen: elf_xlen(&path),
            path,
        })
        .collect()
}

/// Every `*.elf` file in `dir`, sorted by name. Panics when there are none:
/// an empty directory would make the tests pass vacuously.
pub fn elf_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "elf"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no ELF files in {}", dir.display());
    files
}

/// The file name without directory, for messages.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// 32 or 64, from the ELF header's class byte.
pub fn elf_xlen(path: &Path) -> u32 {
    let mut header = [0u8; 5];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert_eq!(
        &header[..4],
        b"\x7fELF",
        "{} is not an ELF file",
        path.display()
    );
    match header[4] {
        1 => 32,
        2 => 64,
        c => panic!("{}: unknown ELF class {c}", path.display()),
    }
}

/// A directory of its own under the system's temporary directory for one
/// test binary (`tag` and the process id), created empty.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}
