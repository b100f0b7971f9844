//! The keywords of every recipes command, which a schema may not use as a
//! name: `ULIST.CREATE s VALUE session_id TTL 600` would otherwise declare a
//! value named `TTL` (ULIST says EXPIRE) and fail only at the first write.
//! `lib.rs` checks this table against every command's grammar.

/// Each keyword (upper case) with the public commands that take it.
pub const KEYWORDS: &[(&str, &str)] = &[
    ("ALIGN", "TOPN.CREATE"),
    ("AT", "HCOUNTER.INCR, HCOUNTER.INCRBY, RV.ADD, TOPN.COUNT, TOPN.INCR, TOPN.INCRBY, TOPN.TOP, TOPN.TOP24, ULIST.ADD"),
    ("BUCKET", "TOPN.CREATE"),
    ("BY", "TOPN.INCR"),
    ("CAPACITY", "TOPN.CREATE"),
    ("COUNT", "HCOUNTER.DATA, HCOUNTER.PARTITIONS, TL.RANGE, TL.REM, ULIST.DATA, ULIST.PARTITIONS"),
    ("CURSOR", "HCOUNTER.DATA, HCOUNTER.PARTITIONS, ULIST.DATA, ULIST.PARTITIONS"),
    ("EXPIRE", "ULIST.ADD, ULIST.CREATE"),
    ("FLOAT", "HCOUNTER.CREATE"),
    ("GROUP", "HCOUNTER.CREATE"),
    ("LAST", "TOPN.COUNT, TOPN.TOP"),
    ("LIMIT", "RV.GET"),
    ("MAXLEN", "RV.ADD, TL.PUSH"),
    ("NEVER", "ULIST.ADD"),
    ("OFFSET", "TL.RANGE"),
    ("PARTITION", "HCOUNTER.CREATE, ULIST.CREATE"),
    ("PXAT", "RV.ADD, TL.PUSH, ULIST.ADD"),
    ("REFRESH", "ULIST.ADD"),
    ("SCOPE", "HCOUNTER.CREATE, ULIST.CREATE"),
    ("SINCE", "RV.GET"),
    ("SLACK", "TL.PUSH"),
    ("TTL", "HCOUNTER.CREATE, RV.ADD, TL.PUSH"),
    ("UNIQUE", "HCOUNTER.CREATE"),
    ("VALUE", "ULIST.CREATE"),
    ("VIEWS", "TOPN.CREATE"),
    ("WINDOW", "TOPN.CREATE"),
    ("WITHCOUNTS", "TOPN.TOP, TOPN.TOP24"),
    ("WITHERRORS", "TOPN.COUNT, TOPN.TOP, TOPN.TOP24"),
    ("WITHSCORES", "RV.GET"),
];

/// The commands that take `name` as a keyword (any case), if it is one.
pub fn keyword_of(name: &[u8]) -> Option<(&'static str, &'static str)> {
    KEYWORDS
        .iter()
        .find(|(k, _)| name.eq_ignore_ascii_case(k.as_bytes()))
        .copied()
}
