//! Going back: the releases docs/upgrading.md says take back everything this
//! build writes (swap the `.so` and restart) load its AOF and its RDB of
//! every family and option with the same answers.

use super::golden::{aof_server, family_sequence, reads_text};
use super::*;

/// The releases that read everything this build writes. A change that
/// writes something one of them cannot read takes it out of this list and
/// adds its row to docs/upgrading.md's downgrade table.
const READ_BACK_BY: &[&str] = &["0.3.0", "0.2.0"];

#[test]
fn what_this_build_writes_loads_on_the_releases_that_read_it_back() {
    let release = previous_release();
    if !READ_BACK_BY.contains(&release.as_str()) {
        return;
    }
    for fam in FAMILIES {
        let mut srv = aof_server().module_args(AHEAD_OF_THE_CLOCK).start();
        family_sequence(&srv, fam.name, true);
        let want = reads_text(&mut srv.conn());
        q_ok(&mut srv.conn(), &["SAVE"]);
        srv.stop();
        srv.reconfigure(|b| b.module(&previous_module()));
        srv.restart();
        let what = format!("{release} loading this build's AOF of {}", fam.name);
        assert_no_critical(&srv, &what);
        assert_eq!(reads_text(&mut srv.conn()), want, "{what}");
        srv.stop();
        srv.reconfigure(|b| b.config("appendonly", "no"));
        srv.restart();
        let what = format!("{release} loading this build's RDB of {}", fam.name);
        assert_eq!(reads_text(&mut srv.conn()), want, "{what}");
    }
}
