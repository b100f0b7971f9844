//! A small JSON writer for bench results: a group builds a [`Json`] value and
//! [`write_results`] stores it as `target/bench/<name>.json` (for plots and
//! A/B comparisons of `make bench` runs). No parsing, no dependencies.

use std::fmt::Write as _;
use std::path::PathBuf;

/// A JSON value. Object members keep their insertion order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// Non-finite numbers are written as `null` (JSON has no NaN).
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(name, value)` pairs.
    pub(crate) fn obj<K: Into<String>>(members: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Obj(members.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// Pretty-printed text (two-space indent), ending with a newline.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out.push('\n');
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(x) if x.is_finite() => {
                // Integers without a fraction; others with the shortest round-trip digits.
                if x.fract() == 0.0 && x.abs() < 1e15 {
                    let _ = write!(out, "{}", *x as i64);
                } else {
                    let _ = write!(out, "{x}");
                }
            }
            Json::Num(_) => out.push_str("null"),
            Json::Str(s) => write_str(out, s),
            Json::Arr(items) => write_seq(out, depth, '[', ']', items, |out, v, d| v.write(out, d)),
            Json::Obj(members) => write_seq(out, depth, '{', '}', members, |out, (k, v), d| {
                write_str(out, k);
                out.push_str(": ");
                v.write(out, d);
            }),
        }
    }
}

fn write_seq<T>(
    out: &mut String,
    depth: usize,
    open: char,
    close: char,
    items: &[T],
    item: impl Fn(&mut String, &T, usize),
) {
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return;
    }
    for (i, x) in items.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        out.push_str(&"  ".repeat(depth + 1));
        item(out, x, depth + 1);
    }
    out.push('\n');
    out.push_str(&"  ".repeat(depth));
    out.push(close);
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl From<f64> for Json {
    fn from(x: f64) -> Json {
        Json::Num(x)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.into())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(v: Option<T>) -> Json {
        v.map_or(Json::Null, Into::into)
    }
}

/// The directory results go to: `<repo>/target/bench`.
pub(crate) fn results_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench")
}

/// Writes `doc` to `target/bench/<name>.json` (replacing it atomically: a
/// reader never sees half a file); returns the path.
pub(crate) fn write_results(name: &str, doc: &Json) -> Result<PathBuf, String> {
    let dir = results_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.json"));
    let tmp = dir.join(format!(".{name}.json.{}", std::process::id()));
    std::fs::write(&tmp, doc.render()).map_err(|e| format!("write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("rename to {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_nested_values_with_escapes() {
        let doc = Json::obj([
            ("name", Json::from("a \"b\"\\\n\u{1}")),
            ("n", Json::from(1500.0)),
            ("x", Json::from(0.25)),
            ("nan", Json::from(f64::NAN)),
            ("none", Json::from(None::<f64>)),
            ("ok", Json::from(true)),
            ("list", Json::Arr(vec![Json::from(-2.0), Json::Arr(vec![])])),
            ("empty", Json::obj(Vec::<(String, Json)>::new())),
        ]);
        assert_eq!(
            doc.render(),
            "{\n  \"name\": \"a \\\"b\\\"\\\\\\n\\u0001\",\n  \"n\": 1500,\n  \"x\": 0.25,\n  \
             \"nan\": null,\n  \"none\": null,\n  \"ok\": true,\n  \"list\": [\n    -2,\n    []\n  ],\n  \
             \"empty\": {}\n}\n"
        );
    }
}
