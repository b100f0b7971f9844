//! What else is measured around a run: CPU use (the server's, the bench's,
//! the rest of the machine's) and a PING probe's round trips.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::control::{connect, err_text, Conn};
use crate::report::thousands;
use crate::settings::stopped;

/// CPU seconds the whole machine spent busy so far (all CPUs, from
/// /proc/stat; steal counts as busy), if it can be read.
fn machine_busy_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    if f.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest* are inside user)
    let total: u64 = f.iter().take(8).sum();
    let busy = total - f[3] - f[4];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| busy as f64 / hz as f64)
}

/// CPU seconds (user + sys) used by this process so far, all threads.
fn own_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(u.ru_utime) + tv(u.ru_stime)
    }
}

/// CPU use during a run, in cores.
#[derive(Clone, Copy)]
pub(crate) struct CpuUse {
    /// the redis-server
    pub server: f64,
    /// this bench (the load generator)
    pub client: f64,
    /// everything else on the machine (other processes, steal), if known
    pub other: Option<f64>,
}

pub(crate) struct CpuSnap {
    server: f64,
    own: f64,
    machine: Option<f64>,
    at: Instant,
}

impl CpuSnap {
    pub fn take(c: &mut Conn) -> Result<CpuSnap, String> {
        Ok(CpuSnap {
            server: c.server_cpu()?,
            own: own_cpu(),
            machine: machine_busy_cpu(),
            at: Instant::now(),
        })
    }

    pub fn since(&self, before: &CpuSnap) -> CpuUse {
        let secs = (self.at - before.at).as_secs_f64().max(1e-9);
        let server = (self.server - before.server) / secs;
        let client = (self.own - before.own) / secs;
        let other = match (self.machine, before.machine) {
            (Some(a), Some(b)) => Some(((a - b) / secs - server - client).max(0.0)),
            _ => None,
        };
        CpuUse {
            server,
            client,
            other,
        }
    }
}

/// PING round trips of one client, about one per millisecond.
pub(crate) struct PingStats {
    /// (sent at, round trip)
    pub samples: Vec<(Instant, Duration)>,
}

impl PingStats {
    pub fn within(&self, from: Instant, to: Instant) -> PingStats {
        PingStats {
            samples: self
                .samples
                .iter()
                .filter(|(t, _)| *t >= from && *t <= to)
                .copied()
                .collect(),
        }
    }
    pub fn sorted_us(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .samples
            .iter()
            .map(|(_, d)| d.as_secs_f64() * 1e6)
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    }
    pub fn max_us(&self) -> f64 {
        self.sorted_us().last().copied().unwrap_or(0.0)
    }
    /// The `q` quantile of the round trips, us (0 without samples).
    pub fn percentile(&self, q: f64) -> f64 {
        let v = self.sorted_us();
        v.get(((v.len().max(1) - 1) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    }
    /// The max of each consecutive window `len` long: a max over fewer
    /// samples is smaller, so a short run compares with these.
    pub fn window_maxes_us(&self, len: Duration) -> Vec<f64> {
        let Some(&(t0, _)) = self.samples.first() else {
            return vec![];
        };
        let len = len.max(Duration::from_millis(1));
        let mut maxes: Vec<f64> = Vec::new();
        let mut current: Option<(u32, f64)> = None;
        for (t, d) in &self.samples {
            let w = ((*t - t0).as_secs_f64() / len.as_secs_f64()) as u32;
            let us = d.as_secs_f64() * 1e6;
            current = match current {
                Some((cw, m)) if cw == w => Some((cw, m.max(us))),
                Some((_, m)) => {
                    maxes.push(m);
                    Some((w, us))
                }
                None => Some((w, us)),
            };
        }
        // the last window only if complete
        if let (Some((w, m)), Some(&(t, _))) = (current, self.samples.last()) {
            if (t - t0).as_secs_f64() >= (w + 1) as f64 * len.as_secs_f64() * 0.9 {
                maxes.push(m);
            }
        }
        maxes
    }
    pub fn text(&self) -> String {
        let v = self.sorted_us();
        if v.is_empty() {
            return "no samples".into();
        }
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        format!(
            "max {} us, p99 {} us, p50 {} us ({} PINGs)",
            thousands(q(1.0)),
            thousands(q(0.99)),
            thousands(q(0.5)),
            v.len()
        )
    }
}

/// PING, read the reply, sleep 1 ms, until `stop` (or 10 minutes).
fn ping_loop(mut c: redis::Connection, stop: &AtomicBool) -> Result<PingStats, String> {
    let ping = redis::cmd("PING");
    let mut samples = Vec::new();
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) && !stopped() && start.elapsed() < Duration::from_secs(600)
    {
        let t = Instant::now();
        let pong: String = ping
            .query(&mut c)
            .map_err(|e| format!("PING: {}", err_text(&e)))?;
        if pong != "PONG" {
            return Err(format!("PING: {pong}"));
        }
        samples.push((t, t.elapsed()));
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(PingStats { samples })
}

/// Runs `work` while a probe client PINGs the server on `port` from its own connection.
pub(crate) fn probed<T>(
    port: u16,
    work: impl FnOnce() -> Result<T, String>,
) -> Result<(T, PingStats), String> {
    // Connected before the work starts: the connection's handshake waits
    // for the server too, and would hide a stall at the start of the work.
    let c = connect(port).map_err(|e| format!("PING client: {e}"))?;
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let probe = sc.spawn(|| ping_loop(c, &stop));
        let out = work();
        stop.store(true, Ordering::Relaxed);
        let pings = probe
            .join()
            .unwrap_or_else(|_| Err("PING thread panicked".into()));
        Ok((out?, pings?))
    })
}
