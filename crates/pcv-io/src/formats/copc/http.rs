//! COPC over HTTP(S): a [`ByteSource`] that reads byte ranges with HTTP range requests, retries, and
//! keeps what it fetched in an on-disk cache.
//!
//! How it works: opening asks for the file's first 64 KiB (`Range: bytes=0-65535`); the server must
//! answer `206 Partial Content` with a `Content-Range: bytes 0-N/TOTAL`, which gives the file's size.
//! A `200` (the whole file) means the server ignores ranges: that is an error saying so, before the body
//! is read. The first bytes (header and VLRs) stay in memory; every other read (hierarchy pages, nodes)
//! is one range request on a shared [`ureq::Agent`] (a pool of kept-alive connections, so the
//! level-of-detail streamer's threads fetch several nodes at once). A request that fails to connect,
//! times out, is cut short or gets a 429 or 5xx is retried with exponential backoff (0.25 s, 0.5 s,
//! 1 s, ...; [`HttpOptions::retries`] times, each said on stderr and in the window: `crate::notices`);
//! other statuses fail at once, naming
//! the URL, the range and the status. Timeouts: connecting ([`HttpOptions::connect_timeout`]), a
//! silent server (no byte read for [`HttpOptions::stall_timeout`]), one request start to end
//! ([`HttpOptions::timeout`]), and a deadline over every attempt of one read, opening included
//! ([`HttpOptions::deadline`], `--http-timeout`): a server that never answers fails within it. Once a
//! read has failed that way, later reads of the file fail at once (a server that stopped answering
//! fails the view's nodes in one deadline, not one each). Fetched ranges are stored under the user's cache directory
//! (`$PCV_CACHE_DIR`, else `$XDG_CACHE_HOME/pcv/copc`, else `~/.cache/pcv/copc`; `%LOCALAPPDATA%\pcv\copc`
//! on Windows), in a folder per URL, size and ETag (a changed file gets a new folder), one file per
//! range written through a temporary name and renamed, so a second run reads them from disk.
//!
//! ureq with rustls was chosen over reqwest: blocking (the readers are plain threads), no async
//! runtime, and no OpenSSL to link (Windows cross-builds included); a much smaller dependency tree.
use super::bytes::{check_range, ByteSource};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Whether `s` is an `http://` or `https://` URL.
pub fn is_url(s: &str) -> bool {
    let l = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

/// How to fetch.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Retries after a failed request (connection errors, timeouts, 429, 5xx).
    pub retries: u32,
    /// The first retry's wait; each next one waits twice as long.
    pub backoff: Duration,
    /// The most one request may take, start to end.
    pub timeout: Duration,
    /// The most connecting may take.
    pub connect_timeout: Duration,
    /// The most a server may stay silent within a request (no byte read).
    pub stall_timeout: Duration,
    /// The most one read may take with its retries (opening the URL is one).
    pub deadline: Duration,
    /// Where fetched ranges are kept (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
}

/// The deadline [`HttpOptions::default`] takes, in milliseconds ([`set_default_deadline`]).
static DEFAULT_DEADLINE_MS: AtomicU64 = AtomicU64::new(20_000);

/// Sets the deadline of every later [`HttpOptions::default`] (the command line's `--http-timeout`).
pub fn set_default_deadline(d: Duration) {
    DEFAULT_DEADLINE_MS.store(d.as_millis().max(1) as u64, Ordering::Relaxed);
}

impl Default for HttpOptions {
    fn default() -> Self {
        let deadline = Duration::from_millis(DEFAULT_DEADLINE_MS.load(Ordering::Relaxed));
        HttpOptions {
            retries: 4,
            backoff: Duration::from_millis(250),
            timeout: Duration::from_secs(60).min(deadline),
            // At most half the deadline each, so a silent server is tried twice within it.
            connect_timeout: Duration::from_secs(5).min(deadline / 2),
            stall_timeout: Duration::from_secs(10).min(deadline / 2),
            deadline,
            cache_dir: default_cache_dir(),
        }
    }
}

/// The user's cache folder for fetched COPC ranges.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("PCV_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    #[cfg(windows)]
    let base = std::env::var_os("LOCALAPPDATA").map(PathBuf::from);
    #[cfg(not(windows))]
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    base.map(|b| b.join("pcv").join("copc"))
}

/// Bytes read on opening (header and VLRs; a COPC file's fit in a few KiB).
const FIRST_BYTES: u64 = 64 << 10;

/// A COPC file on an HTTP(S) server.
pub struct HttpSource {
    url: String,
    agent: ureq::Agent,
    size: u64,
    first: Vec<u8>,
    opts: HttpOptions,
    /// This file's folder in the cache.
    cache: Option<PathBuf>,
    /// A read failed for want of an answer: later reads try once.
    silent: AtomicBool,
}

/// 64-bit FNV-1a, for cache folder names.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// A failed attempt: whether trying again may help, and what happened.
struct Failure {
    retry: bool,
    what: String,
}

impl HttpSource {
    /// Opens `url`: checks that the server answers range requests and reads the first bytes.
    pub fn open(url: &str, opts: &HttpOptions) -> Result<HttpSource, String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(opts.timeout))
            .timeout_connect(Some(opts.connect_timeout))
            .timeout_per_read(Some(opts.stall_timeout))
            .max_idle_connections_per_host(16)
            .build()
            .into();
        let mut s = HttpSource {
            url: url.into(),
            agent,
            size: 0,
            first: Vec::new(),
            opts: opts.clone(),
            cache: None,
            silent: AtomicBool::new(false),
        };
        let (first, total, etag) = s.fetch(0, FIRST_BYTES, true)?;
        s.size = total;
        s.first = first;
        s.cache = opts.cache_dir.as_ref().map(|d| d.join(format!("{:016x}-{total}-{:016x}", fnv(url), fnv(&etag))));
        Ok(s)
    }

    /// One range request with retries, within [`HttpOptions::deadline`]: the bytes, the file's size
    /// and its ETag. `first`: the opening request, which may ask past the end (the server clips it).
    fn fetch(&self, offset: u64, len: u64, first: bool) -> Result<(Vec<u8>, u64, String), String> {
        let deadline = Instant::now() + self.opts.deadline;
        let mut wait = self.opts.backoff;
        let mut attempt = 0;
        let (retries, end) = (self.opts.retries, offset + len);
        if self.silent.load(Ordering::Relaxed) {
            let secs = self.opts.deadline.as_secs_f64();
            return Err(format!("bytes {offset}..{end}: not asked: the server stopped answering (an earlier read got no answer within {secs:.0} s)"));
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let f = match self.try_fetch(offset, len, first, left) {
                Ok(r) => return Ok(r),
                Err(f) => f,
            };
            let late = Instant::now() + wait >= deadline;
            if f.retry && attempt < retries && !late {
                attempt += 1;
                crate::notices::say(format!(
                    "{}: bytes {offset}..{end}: {}; retrying in {:.2} s ({attempt} of {retries})",
                    self.url,
                    f.what,
                    wait.as_secs_f64()
                ));
                std::thread::sleep(wait);
                wait *= 2;
                continue;
            }
            let tries = if attempt > 0 { format!(" (after {} attempts)", attempt + 1) } else { String::new() };
            let why = match f.retry && late {
                true => {
                    self.silent.store(true, Ordering::Relaxed);
                    format!("; no answer within {:.0} s (--http-timeout)", self.opts.deadline.as_secs_f64())
                }
                false => String::new(),
            };
            return Err(format!("bytes {offset}..{end}: {}{tries}{why}", f.what));
        }
    }

    /// One request, taking at most `left` (what the read's deadline leaves).
    fn try_fetch(&self, offset: u64, len: u64, first: bool, left: Duration) -> Result<(Vec<u8>, u64, String), Failure> {
        let range = format!("bytes={offset}-{}", offset + len.max(1) - 1);
        let mut resp = self
            .agent
            .get(&self.url)
            .header("Range", &range)
            .config()
            .timeout_global(Some(self.opts.timeout.min(left).max(Duration::from_millis(1))))
            .build()
            .call()
            .map_err(|e| Failure { retry: true, what: format!("request failed: {e}") })?;
        let status = resp.status().as_u16();
        match status {
            206 => {}
            200 => {
                return Err(Failure {
                    retry: false,
                    what: "the server does not support range requests (it answered 200 with the whole file instead of 206 Partial Content); \
                           pcv reads COPC over HTTP only from servers that serve byte ranges — download the file and open it from disk"
                        .into(),
                })
            }
            416 if first => return Err(Failure { retry: false, what: "the server says the file is empty (416 Range Not Satisfiable)".into() }),
            429 | 500..=599 => return Err(Failure { retry: true, what: format!("the server answered {status}") }),
            _ => return Err(Failure { retry: false, what: format!("the server answered {status}") }),
        }
        let header = |n: &str| resp.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
        let cr = header("content-range")
            .ok_or_else(|| Failure { retry: false, what: "a 206 answer without a Content-Range header".into() })?;
        let etag = header("etag").unwrap_or_default();
        // "bytes START-END/TOTAL"
        let parse = || -> Option<(u64, u64, u64)> {
            let rest = cr.trim().strip_prefix("bytes ")?;
            let (span, total) = rest.split_once('/')?;
            let (a, b) = span.split_once('-')?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?, total.trim().parse().ok()?))
        };
        let (start, end, total) =
            parse().ok_or_else(|| Failure { retry: false, what: format!("cannot read its Content-Range '{cr}'") })?;
        let want_end = if first { (offset + len).min(total) } else { offset + len };
        if start != offset || end + 1 != want_end {
            return Err(Failure {
                retry: false,
                what: format!("the server sent bytes {start}..{} for a request of {offset}..{want_end}", end + 1),
            });
        }
        let n = want_end - offset;
        let body = resp
            .body_mut()
            .with_config()
            .limit(n + 1)
            .read_to_vec()
            .map_err(|e| Failure { retry: true, what: format!("the answer broke off: {e}") })?;
        if body.len() as u64 != n {
            return Err(Failure { retry: true, what: format!("the answer holds {} bytes, not {n}", body.len()) });
        }
        Ok((body, total, etag))
    }

    fn cache_file(&self, offset: u64, len: usize) -> Option<PathBuf> {
        self.cache.as_ref().map(|d| d.join(format!("{offset}-{len}")))
    }
}

impl ByteSource for HttpSource {
    fn name(&self) -> String {
        self.url.clone()
    }

    fn stopped(&self) -> Option<String> {
        self.silent.load(Ordering::Relaxed).then(|| {
            format!(
                "the server stopped answering (a read got no answer within {:.0} s)",
                self.opts.deadline.as_secs_f64()
            )
        })
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, String> {
        check_range(offset, len, self.size)?;
        if offset + len as u64 <= self.first.len() as u64 {
            return Ok(self.first[offset as usize..offset as usize + len].to_vec());
        }
        let cached = self.cache_file(offset, len);
        if let Some(c) = &cached {
            if let Ok(b) = std::fs::read(c) {
                if b.len() == len {
                    return Ok(b);
                }
            }
        }
        let (bytes, _, _) = self.fetch(offset, len as u64, false)?;
        if let Some(c) = cached {
            // A cache that cannot be written is no error: the bytes were fetched.
            if let Some(dir) = c.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let tmp = c.with_extension(
                format!("partial-{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], ""),
            );
            if std::fs::write(&tmp, &bytes).is_ok() && std::fs::rename(&tmp, &c).is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
        }
        Ok(bytes)
    }
}
