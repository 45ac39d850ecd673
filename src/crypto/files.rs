//! The key files: reading and creating them (0600 in a 0700 directory), the old sealing
//! keys beside the current one, atomic replacement.

use super::{hex, random_bytes, unhex, CryptoError, MacRoot};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The old sealing keys' files beside `path`: `sealing.key.<suffix>`, sorted.
pub(super) fn old_key_files(path: &Path) -> Result<Vec<PathBuf>, CryptoError> {
    let io = |source| CryptoError::KeyFile { path: path.to_owned(), source };
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{name}.");
    let mut old: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    old.sort_unstable();
    Ok(old)
}

/// Where rotation keeps the old key `kid`: `sealing.key.<kid>` beside `path`.
pub(super) fn old_key_path(path: &Path, kid: &str) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key");
    path.with_file_name(format!("{name}.{kid}"))
}

/// The text of key file `p`.
fn read_text(p: &Path) -> Result<Zeroizing<String>, CryptoError> {
    std::fs::read_to_string(p).map(Zeroizing::new).map_err(|source| CryptoError::KeyFile { path: p.to_owned(), source })
}

pub(super) fn read_mac_root(p: &Path) -> Result<MacRoot, CryptoError> {
    let text = read_text(p)?;
    let bad = || CryptoError::BadKey(p.to_owned());
    let (id, hexed) = text.trim().split_once(':').ok_or_else(bad)?;
    let bytes = Zeroizing::new(unhex(hexed).filter(|b| b.len() == 32).ok_or_else(bad)?);
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut key = Zeroizing::new([0u8; 32]);
    key.copy_from_slice(&bytes);
    Ok(MacRoot { id: id.to_owned(), key })
}

/// Writes `bytes` to `path` atomically: a temp file beside it (`.<name>.tmp`, 0600,
/// synced), renamed over `path`, the directory synced.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("key");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    write_private(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Creates the key file `path` with a fresh random key (mode 0600, parent 0700) unless
/// it exists; whether it was created.
pub(super) fn create_key_file(path: &Path) -> Result<bool, CryptoError> {
    let io = |source| CryptoError::KeyFile { path: path.to_owned(), source };
    if path.exists() {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    set_mode(dir, 0o700).map_err(io)?;
    write_private(path, hex(&random_bytes(32)).as_bytes()).map_err(io)?;
    Ok(true)
}

pub(super) fn read_key(p: &Path) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let text = read_text(p)?;
    let bytes = unhex(&text).filter(|b| b.len() == 32).ok_or_else(|| CryptoError::BadKey(p.to_owned()))?;
    Ok(Zeroizing::new(bytes))
}

/// Writes `bytes` to a new file readable only by its owner (0600).
///
/// # Errors
/// I/O errors, including when the file already exists.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Sets unix permission bits.
///
/// # Errors
/// I/O errors from chmod.
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}
