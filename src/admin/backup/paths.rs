//! What `--out` of `isto admin backup` and `isto admin keys export` may name, beyond
//! `check_out`'s rules: a regular file or nothing. A device (`/dev/null`), a FIFO or a
//! socket — or a symlink to one — is refused even with `--force`: renaming the backup
//! over it would replace a system file (as root, `/dev/null` became a regular file) or
//! a pipe another program reads.

use anyhow::bail;
use std::os::unix::fs::FileTypeExt as _;
use std::path::Path;

/// What kind of special file `t` is, or `None` for a regular file, a directory or a
/// symlink.
fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Refuses an `out` that exists and is (or, through symlinks, points to) a device, a
/// FIFO or a socket. Called before anything is written and again just before the
/// rename.
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
