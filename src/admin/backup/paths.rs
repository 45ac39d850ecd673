//! The files a backup, a restore and a key export write: what `--out` may name
//! ([`check_out`]), temp files, private (0600) creation, directory syncs.

use crate::config::Settings;
use anyhow::{bail, Context as _};
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};

/// What kind of special file `t` is (`None`: a regular file, a directory or a symlink).
fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    [
        (t.is_char_device(), "a character device"),
        (t.is_block_device(), "a block device"),
        (t.is_fifo(), "a FIFO (named pipe)"),
        (t.is_socket(), "a socket"),
    ]
    .into_iter()
    .find_map(|(is, kind)| is.then_some(kind))
}

/// Refuses an `out` that is (or, through symlinks, points to) a device, a FIFO or a
/// socket, even with `--force`: renaming over it would replace a system file (as root,
/// `/dev/null` became a regular file) or a pipe another program reads. Called before
/// anything is written and again just before the rename.
///
/// # Errors
/// Naming the path, what it is and the rule.
pub(super) fn refuse_special(out: &Path) -> anyhow::Result<()> {
    for meta in [std::fs::symlink_metadata(out), std::fs::metadata(out)].into_iter().flatten() {
        if let Some(kind) = special_kind(meta.file_type()) {
            bail!(
                "{} is {kind}, not a regular file: --out must name a regular file or one that does not exist yet \
                 (--force replaces only a regular file)",
                out.display()
            );
        }
    }
    Ok(())
}

/// The temp file of an atomic write of `target`: beside it, hidden.
pub(super) fn temp_beside(target: &Path, what: &str) -> anyhow::Result<PathBuf> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} has no file name", target.display()))?;
    Ok(target.with_file_name(format!(".{name}.{what}-{}", std::process::id())))
}

/// The directory of `path` (`.` for a bare name).
pub(super) fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Creates `path` for writing, mode 0600, failing when it exists.
pub(super) fn create_private(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Checks `--out` of `isto admin backup` and `isto admin keys export` before anything is
/// written: an existing name of any kind (file, symlink, dangling symlink) needs `force`;
/// a directory is refused; the directory it goes in must exist; and the file must not be
/// inside the data directory, `force` or not (every symlink followed), where it could
/// replace the live store or the keys and is lost with the directory.
///
/// # Errors
/// Each refusal above, naming the path and what to do.
pub(super) fn check_out(settings: &Settings, out: &Path, force: bool) -> anyhow::Result<()> {
    let name = out.file_name().with_context(|| format!("{} has no file name; --out names a file", out.display()))?;
    let parent = dir_of(out);
    let real_parent = std::fs::canonicalize(parent).with_context(|| {
        format!("the directory {} of --out does not exist or cannot be read: create it first", parent.display())
    })?;
    if !real_parent.is_dir() {
        bail!("{} is not a directory; --out names a file in an existing directory", parent.display());
    }
    let at = real_parent.join(name);
    let mut places = vec![at.clone()];
    if let Some(target) = resolve_links(&at) {
        places.push(target);
    }
    if let Ok(data) = std::fs::canonicalize(&settings.data_dir) {
        if let Some(p) = places.iter().find(|p| p.starts_with(&data)) {
            bail!(
                "{} is inside the data directory {} ({}): writing there can replace the live store or the keys, \
                 and a copy there is lost with the directory; write it to a file outside the data directory \
                 (--force does not change this)",
                out.display(),
                data.display(),
                p.display()
            );
        }
    }
    refuse_special(out)?;
    if std::fs::symlink_metadata(out).is_ok() {
        if out.is_dir() {
            bail!("{} is a directory; --out names the file to write", out.display());
        }
        if !force {
            bail!("{} exists; choose another file or add --force to replace it", out.display());
        }
    }
    Ok(())
}

/// Where the symlink `path` finally points (followed at most 40 times, resolved even
/// when the last target does not exist); `None` when `path` is no symlink.
fn resolve_links(path: &Path) -> Option<PathBuf> {
    let mut at = path.to_owned();
    let mut followed = false;
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&at) else { break };
        followed = true;
        let joined = if target.is_absolute() { target } else { dir_of(&at).join(target) };
        let name = joined.file_name().map(ToOwned::to_owned);
        let parent = std::fs::canonicalize(dir_of(&joined)).unwrap_or_else(|_| dir_of(&joined).to_owned());
        at = match name {
            Some(n) => parent.join(n),
            None => parent,
        };
    }
    followed.then_some(at)
}

/// Syncs a directory (so a rename in it is durable).
pub(super) fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).with_context(|| format!("cannot sync {}", dir.display()))
}

/// Moves the finished temp file `tmp` to `out` (see [`refuse_special`]), disarms its
/// `guard` and syncs the directory.
///
/// # Errors
/// The refusal; the rename or the sync failing (naming the paths).
pub(super) fn move_into_place(tmp: &Path, out: &Path, mut guard: TempFile) -> anyhow::Result<()> {
    refuse_special(out)?;
    std::fs::rename(tmp, out).with_context(|| format!("cannot rename {} to {}", tmp.display(), out.display()))?;
    guard.0 = None;
    sync_dir(dir_of(out))
}

/// Removes a temp file when dropped, unless disarmed.
pub(super) struct TempFile(pub(super) Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_sockets_and_links_to_them_are_refused_regular_files_are_not() {
        let d = tempfile::tempdir().unwrap();
        let e = refuse_special(Path::new("/dev/null")).unwrap_err().to_string();
        assert!(e.contains("/dev/null is a character device") && e.contains("regular file"), "{e}");
        let sock = d.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = refuse_special(&sock).unwrap_err().to_string();
        assert!(e.contains("is a socket"), "{e}");
        let link = d.path().join("null-link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let e = refuse_special(&link).unwrap_err().to_string();
        assert!(e.contains("null-link is a character device"), "{e}");
        let file = d.path().join("f");
        std::fs::write(&file, "x").unwrap();
        refuse_special(&file).unwrap();
        refuse_special(&d.path().join("missing")).unwrap();
    }
}
