//! The hot path: pipelines of pre-encoded commands and a reply skipper that
//! only counts error replies. A general client (the `redis` crate, used for
//! everything else) builds a value per reply; on a 2-CPU machine those
//! allocations would take CPU from the server being measured.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One argument of a command.
pub(crate) enum A<'a> {
    /// text
    S(&'a str),
    /// unsigned decimal
    U(u64),
    /// `prefix` followed by a number: `K("rv:", 42)` -> `rv:42`
    K(&'a str, u64),
    /// `prefix`, a number, `:`, a number: `K2("topn:", 3, 475000)` -> `topn:3:475000`
    K2(&'a str, u64, u64),
}

pub(crate) fn fmt_u(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = 20;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

fn put_header(out: &mut Vec<u8>, kind: u8, n: u64) {
    let mut t = [0u8; 20];
    out.push(kind);
    out.extend_from_slice(fmt_u(n, &mut t));
    out.extend_from_slice(b"\r\n");
}

fn put_bulk_parts(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    put_header(out, b'$', len as u64);
    for p in parts {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b"\r\n");
}

/// Append one command (a RESP array of bulk strings) to `out`.
pub(crate) fn enc(out: &mut Vec<u8>, args: &[A]) {
    put_header(out, b'*', args.len() as u64);
    for a in args {
        let mut t = [0u8; 20];
        let mut t2 = [0u8; 20];
        match a {
            A::S(s) => put_bulk_parts(out, &[s.as_bytes()]),
            A::U(v) => put_bulk_parts(out, &[fmt_u(*v, &mut t)]),
            A::K(p, v) => put_bulk_parts(out, &[p.as_bytes(), fmt_u(*v, &mut t)]),
            A::K2(p, a, b) => put_bulk_parts(
                out,
                &[p.as_bytes(), fmt_u(*a, &mut t), b":", fmt_u(*b, &mut t2)],
            ),
        }
    }
}

/// Append the whitespace-separated command `line`.
pub(crate) fn enc_line(out: &mut Vec<u8>, line: &str) {
    let args: Vec<A> = line.split_whitespace().map(A::S).collect();
    enc(out, &args);
}

/// What a command generator gets: a fast deterministic RNG (splitmix64) and
/// the wall clock in ms (refreshed once per pipeline).
pub(crate) struct Gen {
    s: u64,
    pub now_ms: u64,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            s: seed ^ 0x5DEE_CE66_D1CE_4E5B,
            now_ms: now_ms(),
        }
    }
    fn next(&mut self) -> u64 {
        self.s = self.s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    /// A random 9-digit id (a page id, a user id).
    pub fn id9(&mut self) -> u64 {
        100_000_000 + self.below(900_000_000)
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn proto_err(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Reads replies just far enough to know where each ends and whether it is
/// an error.
struct Replies<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl<R: Read> Replies<R> {
    fn new(r: R) -> Self {
        Replies {
            r,
            buf: vec![0; 64 * 1024],
            pos: 0,
            end: 0,
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        let n = self.r.read(&mut self.buf[self.end..])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            ));
        }
        self.end += n;
        Ok(())
    }

    /// Consume one CRLF-terminated line; returns its range in `buf` (without CRLF),
    /// valid until the next read.
    fn line(&mut self) -> io::Result<(usize, usize)> {
        let mut from = self.pos;
        loop {
            if let Some(i) = self.buf[from..self.end].iter().position(|&c| c == b'\n') {
                let nl = from + i;
                let s = self.pos;
                self.pos = nl + 1;
                let e = if nl > s && self.buf[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                if e == s {
                    return Err(proto_err("empty reply line".into()));
                }
                return Ok((s, e));
            }
            let scanned = self.end - self.pos;
            self.fill()?;
            from = self.pos + scanned;
        }
    }

    fn num(&self, s: usize, e: usize) -> io::Result<i64> {
        std::str::from_utf8(&self.buf[s + 1..e])
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(|| {
                proto_err(format!(
                    "bad length {:?}",
                    String::from_utf8_lossy(&self.buf[s..e])
                ))
            })
    }

    fn skip_bytes(&mut self, mut n: usize) -> io::Result<()> {
        while n > 0 {
            if self.pos == self.end {
                self.fill()?;
            }
            let take = n.min(self.end - self.pos);
            self.pos += take;
            n -= take;
        }
        Ok(())
    }

    fn take_bytes(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.end - self.pos < n + 2 {
            self.fill()?;
        }
        let v = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n + 2;
        Ok(v)
    }

    /// Skip one complete reply of any type; returns how many error replies it
    /// contained (nested ones too) and keeps the first error's text.
    fn skip(&mut self, first_err: &mut Option<String>) -> io::Result<u64> {
        let (s, e) = self.line()?;
        match self.buf[s] {
            b'+' | b':' | b'_' | b',' | b'#' | b'(' => Ok(0),
            b'-' => {
                if first_err.is_none() {
                    *first_err = Some(String::from_utf8_lossy(&self.buf[s + 1..e]).into_owned());
                }
                Ok(1)
            }
            t @ (b'$' | b'=' | b'!') => {
                let n = self.num(s, e)?;
                if n >= 0 {
                    if t == b'!' && first_err.is_none() {
                        let v = self.take_bytes(n as usize)?;
                        *first_err = Some(String::from_utf8_lossy(&v).into_owned());
                    } else {
                        self.skip_bytes(n as usize + 2)?;
                    }
                }
                Ok((t == b'!') as u64)
            }
            t @ (b'*' | b'~' | b'>' | b'%' | b'|') => {
                let n = self.num(s, e)?;
                let n = if t == b'%' || t == b'|' { n * 2 } else { n };
                let mut errs = 0;
                for _ in 0..n.max(0) {
                    errs += self.skip(first_err)?;
                }
                if t == b'|' {
                    errs += self.skip(first_err)?; // an attribute precedes the real reply
                }
                Ok(errs)
            }
            other => Err(proto_err(format!(
                "unexpected reply type byte {:?}",
                other as char
            ))),
        }
    }
}

/// A connection that sends pre-encoded pipelines and skips their replies.
pub(crate) struct Pipe {
    w: TcpStream,
    r: Replies<TcpStream>,
}

impl Pipe {
    pub fn open(port: u16) -> io::Result<Pipe> {
        let w = TcpStream::connect(("127.0.0.1", port))?;
        w.set_nodelay(true)?;
        w.set_read_timeout(Some(Duration::from_secs(120)))?;
        let r = Replies::new(w.try_clone()?);
        Ok(Pipe { w, r })
    }

    /// Writes `out` (commands producing `replies` replies) and reads them all;
    /// any error reply, also one inside an EXEC reply, fails.
    pub fn exchange(&mut self, out: &[u8], replies: usize) -> Result<(), String> {
        self.w.write_all(out).map_err(|e| format!("write: {e}"))?;
        let mut first = None;
        let mut errs = 0;
        for _ in 0..replies {
            errs += self.r.skip(&mut first).map_err(|e| format!("read: {e}"))?;
        }
        if errs > 0 {
            return Err(format!(
                "{errs} error replies, first: {}",
                first.unwrap_or_default()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_arguments_as_bulk_strings() {
        let mut out = Vec::new();
        enc(
            &mut out,
            &[A::S("GET"), A::K("rv:", 42), A::K2("t:", 3, 7), A::U(0)],
        );
        assert_eq!(
            out,
            b"*4\r\n$3\r\nGET\r\n$5\r\nrv:42\r\n$5\r\nt:3:7\r\n$1\r\n0\r\n"
        );
    }

    #[test]
    fn skips_replies_counting_errors_also_nested_ones() {
        let wire: &[u8] = b"+OK\r\n:5\r\n$-1\r\n$3\r\na\nb\r\n*3\r\n:1\r\n-ERR inner\r\n*0\r\n\
                           -ERR second\r\n%1\r\n+k\r\n*1\r\n-ERR deep\r\n!4\r\nboom\r\n";
        let mut r = Replies::new(wire);
        let mut first = None;
        let errs: Vec<u64> = (0..7).map(|_| r.skip(&mut first).unwrap()).collect();
        assert_eq!(errs, [0, 0, 0, 0, 1, 1, 1]);
        assert_eq!(first.as_deref(), Some("ERR inner"));
        assert_eq!(r.skip(&mut first).unwrap(), 1, "a RESP3 blob error");
        assert!(r.skip(&mut first).is_err(), "the connection ended");
    }
}
