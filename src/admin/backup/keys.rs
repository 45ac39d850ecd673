//! `isto admin keys export`, and installing or adding an export for `isto admin restore
//! --keys`.

use super::*;
use crate::cli::out::{print_json_or, print_line};

/// The key files of the data directory (whose sealing key exists): the current key
/// first, then the older ones, then `handle.key` and `mac.key`.
fn key_files(settings: &Settings) -> anyhow::Result<Vec<PathBuf>> {
    let current = settings.key_path();
    let mut out = vec![current.clone()];
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key");
    let prefix = format!("{name}.");
    let mut old: Vec<PathBuf> = std::fs::read_dir(dir_of(&current))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    old.sort_unstable();
    out.extend(old);
    // Without the handle key every intent handle changes, without the MAC root every
    // person key, pseudonym and keyed hash.
    let fixed = [KeyRing::handle_key_path(&current), KeyRing::mac_key_path(&current)];
    out.extend(fixed.into_iter().filter(|p| p.exists()));
    Ok(out)
}

/// The key ring export's shape: `{"format":"isto-keys","version":1,"warning":…,"keys":
/// [{"file":"sealing.key","hex":"…"}, …]}` (in the order of [`key_files`]).
#[derive(Serialize, Deserialize)]
struct KeysFile {
    format: String,
    version: u64,
    warning: String,
    keys: Vec<KeyEntry>,
}

#[derive(Serialize, Deserialize)]
struct KeyEntry {
    file: String,
    hex: String,
}

/// Runs `isto admin keys export --out FILE`: writes every key of the data directory's
/// key ring to `out` (mode 0600, atomically), after printing [`KEYS_WARNING`]. Reads only
/// the key files, so `isto serve` may run.
///
/// # Errors
/// No key; `out` exists; I/O errors naming the path.
pub fn keys_export(settings: &Settings, out: &Path, force: bool, json_output: bool) -> anyhow::Result<KeysReport> {
    check_out(settings, out, force)?;
    // Opening the ring checks every key and gives the ids (and writes mac.key into a
    // data directory made before it existed, so the export holds it).
    if !settings.key_path().exists() {
        bail!("no sealing key at {}", settings.key_path().display());
    }
    let (ring, _) = KeyRing::load_or_create(&settings.key_path())?;
    let kids = ring.kids();
    let files = key_files(settings)?;
    let mut keys = Vec::new();
    for p in &files {
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        );
        let file = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        keys.push(KeyEntry { file, hex: text.trim().to_owned() });
    }
    let body = zeroize::Zeroizing::new(serde_json::to_string_pretty(&KeysFile {
        format: KEYS_FORMAT.to_owned(),
        version: 1,
        warning: KEYS_WARNING.to_owned(),
        keys,
    })?);
    if !json_output {
        eprintln!("WARNING: {KEYS_WARNING}");
    }
    let tmp = temp_beside(out, "partial")?;
    let mut f = create_private(&tmp)?;
    let guard = TempFile(Some(tmp.clone()));
    f.write_all(body.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(f);
    paths::move_into_place(&tmp, out, guard)?;
    let report = KeysReport { file: out.to_owned(), kids, warning: KEYS_WARNING };
    print_json_or(json_output, &report, || {
        let handle = files.len() > report.kids.len();
        print_line(format_args!(
            "wrote {} key file(s) to {} (mode 0600): sealing key(s) {}{}",
            files.len(),
            out.display(),
            report.kids.join(", "),
            if handle { " and the never-rotated handle.key and mac.key" } else { "" }
        ))
    })?;
    Ok(report)
}

/// Writes the keys of a `keys export` file into the new directory `dir` (0700, files
/// 0600) for `isto admin restore --keys FILE`; returns the path of the current key there.
pub(super) fn install_keys(settings: &Settings, file: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?,
    );
    let k: KeysFile =
        serde_json::from_str(&text).with_context(|| format!("{} is not an isto key export", file.display()))?;
    if k.format != KEYS_FORMAT || k.version != 1 {
        bail!("{} is not an isto key export of version 1", file.display());
    }
    let current = settings.key_path();
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key").to_owned();
    let Some(first) = k.keys.first() else { bail!("{} holds no key", file.display()) };
    if first.file != name {
        bail!("{}: the first key must be the current key {name:?}", file.display());
    }
    let handle_name = KeyRing::handle_key_path(&current).file_name().and_then(|n| n.to_str()).map(str::to_owned);
    let ok_name = |f: &str| {
        f == name
            || handle_name.as_deref() == Some(f)
            || f == crate::crypto::MAC_KEY_FILE
            || f.strip_prefix(&format!("{name}."))
                .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
    };
    std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    crate::crypto::set_mode(dir, 0o700)?;
    for e in &k.keys {
        if !ok_name(&e.file) {
            bail!("{}: key file name {:?} is not {name}, {name}.<id>, handle.key or mac.key", file.display(), e.file);
        }
        crate::crypto::write_private(&dir.join(&e.file), e.hex.as_bytes())
            .with_context(|| format!("cannot write {}", dir.join(&e.file).display()))?;
    }
    // Check they load.
    let staged = dir.join(&name);
    KeyRing::load_or_create(&staged)?;
    Ok(staged)
}

/// Old sealing keys a restore adds to a key ring: file name (`sealing.key.<kid>`) and
/// its hex text.
pub(super) type AddedKeys = Vec<(String, zeroize::Zeroizing<String>)>;

/// For `isto admin restore FILE --keys EXPORT` into a data directory that has a key
/// ring: stages in the new directory `staged` the ring plus every sealing key of the
/// export it lacks (as `sealing.key.<kid>`); nothing is replaced, and an export whose
/// `handle.key` or `mac.key` differs is refused (another holder's). `check` is a scratch
/// directory for loading the export. Returns the staged current key and the files to add.
pub(super) fn stage_added_keys(
    settings: &Settings,
    file: &Path,
    staged: &Path,
    check: &Path,
) -> anyhow::Result<(PathBuf, AddedKeys)> {
    let current = settings.key_path();
    let keys_dir = dir_of(&current);
    let export = install_keys(settings, file, check)?;
    for key in [KeyRing::handle_key_path(&current), KeyRing::mac_key_path(&current)] {
        let n = key.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let read = |p: &Path| std::fs::read_to_string(p).ok().map(|t| zeroize::Zeroizing::new(t.trim().to_owned()));
        let (here, there) = (read(&key), read(&check.join(&n)));
        if here.is_some() && there.is_some() && here != there {
            bail!(
                "{} is another holder's key export: its {n} differs from the one in {} (intent handles and keyed \
                 hashes would not match); --keys adds only the missing sealing keys of this holder's own export, \
                 and nothing was changed",
                file.display(),
                keys_dir.display()
            );
        }
    }
    let (have, _) = KeyRing::load_or_create(&current)?;
    let have = have.kids();
    let (theirs, _) = KeyRing::load_or_create(&export)?;
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key").to_owned();
    let mut add = Vec::new();
    for k in theirs.key_info() {
        if have.contains(&k.kid) {
            continue;
        }
        let Some(f) = k.file else { continue };
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(&f).with_context(|| format!("cannot read {}", f.display()))?.trim().to_owned(),
        );
        add.push((format!("{name}.{}", k.kid), text));
    }
    std::fs::create_dir(staged).with_context(|| format!("cannot create {}", staged.display()))?;
    crate::crypto::set_mode(staged, 0o700)?;
    for e in std::fs::read_dir(keys_dir).with_context(|| format!("cannot read {}", keys_dir.display()))? {
        let p = e?.path();
        if p.is_file() {
            let bytes =
                zeroize::Zeroizing::new(std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?);
            let to = staged.join(p.file_name().unwrap_or_default());
            crate::crypto::write_private(&to, &bytes).with_context(|| format!("cannot write {}", to.display()))?;
        }
    }
    for (f, text) in &add {
        crate::crypto::write_private(&staged.join(f), text.as_bytes())
            .with_context(|| format!("cannot write {}", staged.join(f).display()))?;
    }
    let ring = staged.join(&name);
    KeyRing::load_or_create(&ring)?;
    Ok((ring, add))
}
