//! Memory per stored value: MEMORY USAGE summed over a layout's keys, and
//! what the allocator holds for them (`used_memory` with minus without).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use crate::control::Conn;
use crate::group::{Measure, Measured, Unit};
use crate::report::thousands;

/// `used_memory` once it stops falling: a module frees a big value on a
/// thread of its own after DEL returns (at most 5 s of 20 ms polls).
fn settled_used_memory(c: &mut Conn) -> Result<i64, String> {
    let mut last = c.info_int("memory", "used_memory")?;
    for _ in 0..250 {
        std::thread::sleep(Duration::from_millis(20));
        let now = c.info_int("memory", "used_memory")?;
        if now >= last {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// Per layout id, the bytes per value the allocator holds for it.
pub(crate) type AllocBytes = Rc<RefCell<HashMap<&'static str, f64>>>;

/// Fills one layout with `fill` (`n` values), then reports MEMORY USAGE summed
/// over `keys` per value (the note: totals, the allocator's view, encodings),
/// and deletes the keys. The allocator's view: `used_memory` with the data
/// minus `used_memory` once its keys are deleted and freed,
/// so the loading connection's buffers count on neither side.
pub(crate) fn mem_measure(
    c: &mut Conn,
    id: &'static str,
    alloc: &AllocBytes,
    keys: &[String],
    n: u64,
    fill: impl FnOnce(&mut Conn) -> Result<(), String>,
) -> Result<Measured, String> {
    fill(c)?;
    let used1 = c.info_int("memory", "used_memory")?;
    let mut total = 0;
    for k in keys {
        total += c.memory_usage(k)?;
    }
    let first_enc = c.encoding(&keys[0])?;
    let encodings = match keys {
        [.., last] if keys.len() > 1 => format!(
            "{} keys, {first_enc} of the partitions like {}, {} of {last}",
            keys.len(),
            keys[0],
            c.encoding(last)?
        ),
        _ => format!("1 key {}", keys[0]),
    };
    c.query::<()>(redis::cmd("DEL").arg(keys))?;
    let used0 = settled_used_memory(c)?;
    let n = n as f64;
    alloc.borrow_mut().insert(id, (used1 - used0) as f64 / n);
    let note = format!(
        "MEMORY USAGE total {} B; allocated {} B = {:.1} B/value; {encodings}",
        thousands(total as f64),
        thousands((used1 - used0) as f64),
        (used1 - used0) as f64 / n
    );
    Ok((total as f64 / n, note).into())
}

/// The allocator's bytes per value of layout `of` (measured by its measure,
/// which runs before); same role and params as `of`, plus `by: allocator`.
pub(crate) fn mem_alloc(id: &'static str, of: &Measure, alloc: &AllocBytes) -> Measure {
    let (alloc, of_id) = (alloc.clone(), of.id);
    let mut m = Measure::new(
        id,
        of.role,
        format!("{of_id}: allocated (used_memory with minus without the keys)"),
        Unit::BytesPerValue,
        move |_| {
            let v = alloc.borrow().get(of_id).copied();
            v.map(|v| (v, String::new()).into())
                .ok_or_else(|| format!("{of_id} was not measured"))
        },
    )
    .requires(&of.requires);
    m.params = of.params.clone();
    m.param("by", "allocator")
}
