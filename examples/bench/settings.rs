//! What a run is told: the `BENCH_*` environment, the module, and Ctrl-C.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::server::find_module;

pub(crate) struct Settings {
    pub clients: usize,
    pub pipeline: usize,
    pub rounds: usize,
    pub ms: u64,
    pub keys: u64,
    pub only: Vec<String>,
    pub module: PathBuf,
    /// `RECIPES_MODULE` unset: the build's own module (checked for staleness).
    pub module_is_default: bool,
    /// `BENCH_TOPN_COMPACT_MAX`: `recipes.topn-compact-max` for the `topn-small` keys (unset:
    /// the server's), e.g. 0 to measure them without the compact layout.
    pub topn_compact_max: Option<u64>,
}

fn env_num(name: &str, default: u64, min: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= min => Ok(n),
            _ => Err(format!("{name}={v:?}: expected an integer >= {min}")),
        },
    }
}

impl Settings {
    pub fn from_env() -> Result<Settings, String> {
        let module = find_module()
            .map_err(|e| format!("{e}\n  (`make bench` builds it; or `cargo build --release`)"))?;
        Ok(Settings {
            clients: env_num("BENCH_CLIENTS", 4, 1)? as usize,
            pipeline: env_num("BENCH_PIPELINE", 64, 1)? as usize,
            rounds: env_num("BENCH_ROUNDS", 5, 1)? as usize,
            ms: env_num("BENCH_MS", 1000, 10)?,
            keys: env_num("BENCH_KEYS", 10_000, 1)?,
            only: std::env::var("BENCH_ONLY")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
            module,
            module_is_default: std::env::var_os("RECIPES_MODULE").is_none(),
            topn_compact_max: match std::env::var_os("BENCH_TOPN_COMPACT_MAX") {
                Some(_) => Some(env_num("BENCH_TOPN_COMPACT_MAX", 0, 0)?),
                None => None,
            },
        })
    }

    pub fn wants(&self, group_id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| group_id.starts_with(o.as_str()))
    }

    /// The environment and command that reproduce this run.
    pub fn command_line(&self) -> String {
        let mut s = format!(
            "BENCH_CLIENTS={} BENCH_PIPELINE={} BENCH_ROUNDS={} BENCH_MS={} BENCH_KEYS={}",
            self.clients, self.pipeline, self.rounds, self.ms, self.keys
        );
        if !self.only.is_empty() {
            s += &format!(" BENCH_ONLY={}", self.only.join(","));
        }
        if !self.module_is_default {
            s += &format!(" RECIPES_MODULE={}", self.module.display());
        }
        if let Some(n) = self.topn_compact_max {
            s += &format!(" BENCH_TOPN_COMPACT_MAX={n}");
        }
        s + " cargo run --release --example bench"
    }

    /// A warning when `src/` changed after the module was built.
    pub fn stale_warning(&self) -> Option<String> {
        if !self.module_is_default {
            return None;
        }
        let so = std::fs::metadata(&self.module).ok()?.modified().ok()?;
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut newest = None;
        let mut stack = vec![src];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).ok()?.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
                    if newest.is_none_or(|n| t > n) {
                        newest = Some(t);
                    }
                }
            }
        }
        (newest? > so).then(|| {
            "warning: src/ is newer than the module; run `cargo build --release` first".into()
        })
    }
}

/// Set by SIGINT / SIGTERM: runs stop after their current pipeline, the bench
/// reports "interrupted" and stops its servers on the way out.
static STOP: AtomicBool = AtomicBool::new(false);

pub(crate) fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

pub(crate) fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}
