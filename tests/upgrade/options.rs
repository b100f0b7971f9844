//! Commands with every option a release knew that the family workloads
//! leave out, on keys under a prefix with every time from a base, so reads
//! made later agree: what the upgrade tests have an older build write, and
//! what the golden AOFs hold.

use super::*;
use common::families::topn::knows_0_2_0;

/// What a build knows of what [`option_commands`] may send it; each release
/// knows what the ones before it did.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Knows {
    /// 0.1.0: TOPN `ALIGN` and `CAPACITY`, ULIST `REFRESH`, `NEVER` and
    /// `PXAT`, compact and big keys of each type.
    Release010,
    /// 0.2.0: `TOPN.INCRBY`, `VIEWS`; keys declared with names that are
    /// keywords now, loaded from an older build ([`add_keyword_named_keys`]).
    Release020,
}

impl Knows {
    /// What the build of the server `c` is connected to knows.
    pub fn of(c: &mut Connection) -> Knows {
        if knows_0_2_0(c) {
            Knows::Release020
        } else {
            Knows::Release010
        }
    }
}

/// Keys under a prefix and times from a base, as the commands spell them.
struct Place<'a> {
    prefix: &'a str,
    base: i64,
}

impl Place<'_> {
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn at(&self, ms: i64) -> String {
        (self.base + ms).to_string()
    }
}

/// The option commands of every family `knows` allows, each with its
/// family's name, on keys under `prefix`, every time from `base`.
pub fn option_commands(prefix: &str, base: i64, knows: Knows) -> Vec<(&'static str, redis::Cmd)> {
    let place = Place { prefix, base };
    let tag =
        |family: &'static str, cmds: Vec<redis::Cmd>| cmds.into_iter().map(move |k| (family, k));
    tag("TOPN", topn_commands(&place, knows))
        .chain(tag("ULIST", ulist_commands(&place)))
        .chain(tag("HCOUNTER", hcounter_commands(&place)))
        .collect()
}

/// Runs [`option_commands`] of every family on `c`, as much as its build
/// knows, panicking on an error reply.
pub fn option_writes(c: &mut Connection, prefix: &str, base: i64) {
    let knows = Knows::of(c);
    run_commands(
        c,
        option_commands(prefix, base, knows)
            .into_iter()
            .map(|(_, k)| k),
    );
}

/// TOPN: ALIGN, CAPACITY, a compact key and a big one; from 0.2.0 VIEWS
/// (with ALIGN, compact; and past the compact layout with buckets retiring
/// out of the views) and `TOPN.INCRBY` batches (on those and on a key with
/// CAPACITY).
fn topn_commands(p: &Place, knows: Knows) -> Vec<redis::Cmd> {
    let mut out = Vec::new();
    let mut add = |args: &[&str]| out.push(cmd(args));
    let (align, capacity) = (p.key("topn:align"), p.key("topn:capacity"));
    let (compact, big) = (p.key("topn:compact"), p.key("topn:big"));
    add(&create(&align, "BUCKET 3600 WINDOW 24 ALIGN 1800"));
    add(&create(&capacity, "BUCKET 60 WINDOW 10 CAPACITY 3"));
    add(&create(&compact, "BUCKET 60 WINDOW 10"));
    add(&create(&big, "BUCKET 60 WINDOW 10"));
    for i in 0..150i64 {
        let m = format!("m{}", i % 97);
        let by = (1 + i % 5).to_string();
        let t = p.at(i * 1_000);
        add(&["TOPN.INCR", &align, &m, "BY", &by, "AT", &t]);
        add(&["TOPN.INCR", &capacity, &m, "BY", &by, "AT", &t]);
        add(&["TOPN.INCR", &big, &format!("b{i}"), "AT", &t]);
        if i < 20 {
            add(&["TOPN.INCR", &compact, &m, "AT", &t]);
        }
    }
    if knows < Knows::Release020 {
        return out;
    }
    // The family's reads ask for LAST 12 of WINDOW 24 and LAST 5 of WINDOW
    // 10: views.
    let (views, views_big) = (p.key("topn:views"), p.key("topn:views:big"));
    let capped_batches = p.key("topn:capacity:incrby");
    add(&create(
        &views,
        "BUCKET 3600 WINDOW 24 ALIGN 1800 VIEWS 12 2",
    ));
    add(&create(&views_big, "BUCKET 60 WINDOW 10 VIEWS 5 3"));
    add(&create(&capped_batches, "BUCKET 60 WINDOW 10 CAPACITY 4"));
    for i in 0..150i64 {
        let (m, b) = (format!("m{}", i % 11), format!("b{i}"));
        let by = (1 + i % 4).to_string();
        // 150 members over 13 buckets of a 10-bucket window.
        let t = p.at(i * 5_000);
        add(&["TOPN.INCRBY", &views_big, "AT", &t, "1", &b, &by, &m]);
        let t = p.at(i * 4_000);
        add(&["TOPN.INCRBY", &capped_batches, "AT", &t, &by, &m, "1", &b]);
        if i < 20 {
            // 12 members over 7 hourly buckets: compact.
            let t = p.at(i * 1_200_000);
            add(&["TOPN.INCRBY", &views, "AT", &t, &by, &m, "-1", "neg"]);
        }
    }
    out
}

/// `TOPN.CREATE key <shape>`, the shape's words split at spaces.
fn create<'a>(key: &'a str, shape: &'a str) -> Vec<&'a str> {
    ["TOPN.CREATE", key]
        .into_iter()
        .chain(shape.split(' '))
        .collect()
}

/// ULIST: a hashed list, a list with EXPIRE written with REFRESH, NEVER and
/// PXAT, and names and values that look like keywords.
fn ulist_commands(p: &Place) -> Vec<redis::Cmd> {
    let mut out = Vec::new();
    let mut add = |args: &[&str]| out.push(cmd(args));
    let (refresh, hashed) = (p.key("ulist:refresh"), p.key("ulist:hashed"));
    add(&[
        "ULIST.CREATE",
        &refresh,
        "VALUE",
        "session",
        "EXPIRE",
        "3600",
    ]);
    add(&["ULIST.CREATE", &hashed, "VALUE", "user", "PARTITION", "day"]);
    for i in 0..700 {
        let (v, day) = (i.to_string(), format!("d{}", i % 3));
        add(&["ULIST.ADD", &hashed, "user", &v, "day", &day]);
    }
    for i in 0..20i64 {
        let v = (i % 7).to_string();
        add(&[
            "ULIST.ADD",
            &refresh,
            "REFRESH",
            "AT",
            &p.at(i * 1_000),
            "session",
            &v,
        ]);
    }
    add(&["ULIST.ADD", &refresh, "NEVER", "session", "n"]);
    add(&[
        "ULIST.ADD",
        &refresh,
        "PXAT",
        &p.at(2 * 3_600_000),
        "session",
        "p",
    ]);
    // Names a client may declare beside keywords, and keywords as values.
    let wordy = p.key("ulist:wordy");
    add(&[
        "ULIST.CREATE",
        &wordy,
        "VALUE",
        "counts",
        "SCOPE",
        "at1",
        "PARTITION",
        "Cursor_",
    ]);
    for value in ["CURSOR", "COUNT", "AT", "NEVER", "REFRESH"] {
        let t = p.at(0);
        add(&[
            "ULIST.ADD",
            &wordy,
            "AT",
            &t,
            "counts",
            value,
            "at1",
            "COUNT",
            "Cursor_",
            value,
        ]);
    }
    out
}

/// HCOUNTER: a big counter, and names and values that look like keywords.
fn hcounter_commands(p: &Place) -> Vec<redis::Cmd> {
    let mut out = Vec::new();
    let mut add = |args: &[&str]| out.push(cmd(args));
    let hc = p.key("hcounter:big");
    add(&[
        "HCOUNTER.CREATE",
        &hc,
        "PARTITION",
        "day",
        "GROUP",
        "page",
        "TTL",
        "86400",
    ]);
    for i in 0..600 {
        let (page, day) = (format!("/p{i}"), format!("d{}", i % 4));
        add(&[
            "HCOUNTER.INCR",
            &hc,
            "AT",
            &p.at(0),
            "day",
            &day,
            "page",
            &page,
        ]);
    }
    let wordy = p.key("hcounter:wordy");
    add(&[
        "HCOUNTER.CREATE",
        &wordy,
        "PARTITION",
        "count_",
        "GROUP",
        "Page",
        "AT_",
    ]);
    for value in ["COUNT", "CURSOR", "AT", "BY"] {
        let t = p.at(0);
        add(&[
            "HCOUNTER.INCR",
            &wordy,
            "AT",
            &t,
            "count_",
            value,
            "Page",
            "GROUP",
            "AT_",
            value,
        ]);
    }
    out
}
