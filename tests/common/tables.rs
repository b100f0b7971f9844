//! Command tables: a test lists commands one a line, as text, and one loop
//! runs them all.
//!
//! ```ignore
//! let module_errors = assert_refusals(c, &[
//!     ("HCOUNTER.CREATE c", "ERR key already exists"),  // the exact text
//!     ("TOPN.CREATE n BUCKET 0", "ERR *BUCKET*"),       // * stands for any text
//!     ("TOPN.CREATE n BUCKET ''", "ERR *BUCKET*"),      // '' = an empty argument
//!     ("TOPN.INCR str m", "WRONGTYPE *"),
//! ]);
//! assert_keys_declared(c, &["TOPN.INCR k1 m BY 2", "TOPN.COUNT k1 a b"]);
//! ```

use super::{cmd, dump_all, expect_err, q};
use redis::Connection;

/// The arguments of a command line: words split on spaces; a word in single
/// quotes is taken as it is, spaces included (`''` is an empty argument,
/// `' 5'` a five after a space).
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let (word, after) = match rest.strip_prefix('\'') {
            Some(quoted) => quoted
                .split_once('\'')
                .unwrap_or_else(|| panic!("unclosed quote in {line:?}")),
            None => rest.split_once(' ').unwrap_or((rest, "")),
        };
        out.push(word.to_string());
        rest = after.trim_start();
    }
    out
}

/// Whether `text` matches `pattern`, in which each `*` stands for any
/// text (none included) and everything else for itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        return rest.is_empty(); // no `*`: the exact text
    };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Runs each row's command line (see [`words`]), which must be refused with
/// an error matching the row's pattern (see [`glob_match`]: the exact text,
/// `"ERR missing name 'day'"`, or a pattern, `"ERR *LAST*WINDOW (4)*"`),
/// and must change nothing: every key of the database (`dump_all`: values,
/// DUMP payloads, expiries) is the same after the row as before it, so no
/// key was created either.
///
/// Returns how many rows the module itself refused: rows of a module command
/// (a name with a dot) other than arity errors, which Redis may refuse
/// before the module runs.
#[track_caller]
pub fn assert_refusals<S: AsRef<str>>(c: &mut Connection, rows: &[(S, &str)]) -> usize {
    let mut module_errors = 0;
    for (line, want) in rows {
        let line = line.as_ref();
        let args = words(line);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let before = dump_all(c);
        let got = expect_err(c, &cmd(&args));
        assert!(
            glob_match(want, &got),
            "{line}: {got:?} does not match {want:?}"
        );
        assert_eq!(
            dump_all(c),
            before,
            "{line}: a refused command changed data"
        );
        if args[0].contains('.') && !got.contains("wrong number of arguments") {
            module_errors += 1;
        }
    }
    module_errors
}
/// Each command line (see [`words`]) declares its second word as its only
/// key (`COMMAND GETKEYS`), so cluster clients and ACL key patterns find it.
#[track_caller]
pub fn assert_keys_declared(c: &mut Connection, lines: &[&str]) {
    for line in lines {
        let mut args = vec!["COMMAND".to_string(), "GETKEYS".to_string()];
        args.extend(words(line));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let keys: Vec<String> = q(c, &args);
        assert_eq!(keys, [args[3]], "{line}");
    }
}
