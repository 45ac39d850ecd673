//! `isto generate`: man pages, shell completions and the config skeleton, made from the
//! clap tree in [`crate::cli`]; the book's reference pages ([`mod@reference`]).

pub mod reference;

use crate::cli::out::{print, print_line};
use crate::cli::{Cli, GenerateCommand, Shell};
use anyhow::Context as _;
use clap::CommandFactory as _;
use std::path::{Path, PathBuf};

/// The date part of the build stamp (`abc1234 2026-12-02` → `2026-12-02`), for the man
/// pages' footer; empty when the build names no date (`unknown`, `debug build`).
fn build_date() -> &'static str {
    let date = env!("ISTO_BUILD").split_whitespace().nth(1).unwrap_or("");
    if date.len() == 10 && date.starts_with(|c: char| c.is_ascii_digit()) {
        date
    } else {
        ""
    }
}

/// The full command tree, built (`isto-admin-backup` etc.), without clap's `help`.
fn command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// Writes one man page (section 1, roff) per visible command into `dir`, created when
/// missing (`isto.1`, `isto-admin-backup.1`, ...); returns the written paths, sorted.
///
/// Errors: `dir` cannot be created or a page cannot be written (naming the path).
pub fn man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}: check the path and its permissions", dir.display()))?;
    fn walk(cmd: &clap::Command, dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
        let page = clap_mangen::Man::new(cmd.clone())
            .date(build_date())
            .source(concat!("isto ", env!("CARGO_PKG_VERSION"), " (", env!("ISTO_BUILD"), ")"))
            .manual("isto manual");
        let path = page
            .generate_to(dir)
            .with_context(|| format!("cannot write the man page {} into {}", page.get_filename(), dir.display()))?;
        out.push(path);
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, dir, out)?;
        }
        Ok(())
    }
    let mut written = Vec::new();
    walk(&command(), dir, &mut written)?;
    written.sort_unstable();
    Ok(written)
}

fn generator(shell: Shell) -> clap_complete::Shell {
    match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Elvish => clap_complete::Shell::Elvish,
        Shell::PowerShell => clap_complete::Shell::PowerShell,
    }
}

/// The completion script for `shell`, as text.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    let mut buf = Vec::new();
    clap_complete::generate(generator(shell), &mut command(), "isto", &mut buf);
    buf
}

/// Writes the completion script for `shell` into `dir` (created when missing) under the
/// name that shell looks for: `isto.bash`, `_isto` (zsh), `isto.fish`, `isto.elv`,
/// `_isto.ps1`. Returns the path.
///
/// Errors: `dir` cannot be created or the file cannot be written.
pub fn completions_to(shell: Shell, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}: check the path and its permissions", dir.display()))?;
    clap_complete::generate_to(generator(shell), &mut command(), "isto", dir)
        .with_context(|| format!("cannot write the completion script into {}", dir.display()))
}

/// The commented config skeleton (`config::SKELETON`); with `data_dir`, its `data_dir`
/// line set to it ([`crate::config::skeleton_with_data_dir`]).
pub fn config_skeleton(data_dir: Option<&Path>) -> anyhow::Result<String> {
    match data_dir {
        None => Ok(crate::config::SKELETON.to_owned()),
        Some(dir) => {
            let dir = dir.to_str().context("--data-dir must be valid UTF-8 to be written into the config")?;
            Ok(crate::config::skeleton_with_data_dir(dir))
        }
    }
}

/// Runs `isto generate ...`: writes what it asks for and prints what was written (one
/// line, or JSON `{"files": [...]}` with `--json`), or the text itself without `--out`.
/// `data_dir` is the global `--data-dir`.
///
/// Errors: as [`man_pages`], [`completions_to`]; `generate config --out FILE` refuses an
/// existing FILE without `--force`.
pub fn run(cmd: GenerateCommand, data_dir: Option<&Path>) -> anyhow::Result<()> {
    use std::io::Write as _;
    let report = |files: &[PathBuf], json: bool, what: &str| -> anyhow::Result<()> {
        if json {
            print_line(serde_json::json!({ "files": files }))
        } else if let [one] = files {
            print_line(format_args!("wrote the {what} {}", one.display()))
        } else {
            let dir = files.first().and_then(|p| p.parent()).map(|d| d.display().to_string()).unwrap_or_default();
            print_line(format_args!("wrote {} {what} into {dir}", files.len()))
        }
    };
    match cmd {
        GenerateCommand::Man { out, json } => report(&man_pages(&out)?, json, "man pages"),
        GenerateCommand::Completions { shell, out: None, .. } => print(&completion_script(shell)),
        GenerateCommand::Completions { shell, out: Some(dir), json } => {
            report(&[completions_to(shell, &dir)?], json, "completion script")
        }
        GenerateCommand::Reference { out, check, json } => {
            let pages = reference::pages(&crate::config::Settings::defaults())?;
            if !check {
                return report(&reference::write(&out, &pages)?, json, "reference pages");
            }
            let stale = reference::stale(&out, &pages);
            if json {
                print_line(serde_json::json!({ "stale": stale }))?;
            }
            if !stale.is_empty() {
                anyhow::bail!(
                    "not what this isto writes: {}; run `isto generate reference --out {}` and commit the result",
                    stale.iter().map(|n| out.join(n).display().to_string()).collect::<Vec<_>>().join(", "),
                    out.display()
                );
            }
            if !json {
                print_line(format_args!("the reference pages in {} are current", out.display()))?;
            }
            Ok(())
        }
        GenerateCommand::Config { out: None, .. } => print(config_skeleton(data_dir)?.as_bytes()),
        GenerateCommand::Config { out: Some(file), force, json } => {
            let text = config_skeleton(data_dir)?;
            if file.exists() && !force {
                anyhow::bail!("{} exists; pass --force to replace it", file.display());
            }
            let mut f = std::fs::File::create(&file)
                .with_context(|| format!("cannot write {}: check the path and its permissions", file.display()))?;
            f.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640))
                .with_context(|| format!("cannot restrict {}", file.display()))?;
            report(&[file], json, "config skeleton")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_man_page_per_visible_command_naming_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let pages = man_pages(&dir.path().join("man1")).unwrap();
        let names: Vec<String> = pages.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        for want in ["isto.1", "isto-serve.1", "isto-admin.1", "isto-admin-backup.1", "isto-admin-keys-export.1"] {
            assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
        let top = std::fs::read_to_string(dir.path().join("man1/isto.1")).unwrap();
        assert!(top.starts_with(".ie \\n(.g .ds Aq") || top.contains(".TH isto 1"), "{}", &top[..200.min(top.len())]);
        assert!(top.contains(env!("CARGO_PKG_VERSION")), "no version in isto.1");
        let backup = std::fs::read_to_string(dir.path().join("man1/isto-admin-backup.1")).unwrap();
        assert!(backup.contains("\\-\\-verify"), "{backup}");
        // The footer names isto and its version, also on a subcommand's page.
        let th = backup.lines().find(|l| l.starts_with(".TH ")).unwrap();
        assert!(th.contains(concat!("\"isto ", env!("CARGO_PKG_VERSION"))) && th.contains("isto manual"), "{th}");
        // Written again: replaced, not an error.
        assert_eq!(man_pages(&dir.path().join("man1")).unwrap(), pages);
    }

    #[test]
    fn completions_name_the_commands_for_each_shell() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::Elvish, Shell::PowerShell] {
            let text = String::from_utf8(completion_script(shell)).unwrap();
            assert!(text.contains("check-config") && text.contains("backup"), "{shell:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let bash = completions_to(Shell::Bash, dir.path()).unwrap();
        assert_eq!(bash.file_name().unwrap(), "isto.bash");
        assert!(std::fs::read_to_string(&bash).unwrap().contains("complete -F _isto"));
        assert_eq!(completions_to(Shell::Zsh, dir.path()).unwrap().file_name().unwrap(), "_isto");
        assert_eq!(completions_to(Shell::Fish, dir.path()).unwrap().file_name().unwrap(), "isto.fish");
    }

    #[test]
    fn a_directory_that_cannot_be_made_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let e = man_pages(&file.join("man1")).unwrap_err();
        assert!(format!("{e:#}").contains("a-file/man1"), "{e:#}");
    }

    #[test]
    fn the_packaged_skeleton_sets_the_data_dir_and_still_parses() {
        assert_eq!(config_skeleton(None).unwrap(), crate::config::SKELETON);
        let text = config_skeleton(Some(Path::new("/var/lib/isto"))).unwrap();
        assert!(text.lines().any(|l| l.starts_with("data_dir = \"/var/lib/isto\"")), "{text}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("isto.toml");
        std::fs::write(&p, &text).unwrap();
        let s =
            crate::config::Settings::load(&crate::config::Overrides { config: Some(p), ..Default::default() }).unwrap();
        assert_eq!(s.data_dir, Path::new("/var/lib/isto"));
        // Only that line differs from the skeleton.
        let changed = text.lines().zip(crate::config::SKELETON.lines()).filter(|(a, b)| a != b).count();
        assert_eq!(changed, 1);
        assert_eq!(text.lines().count(), crate::config::SKELETON.lines().count());
    }
}
