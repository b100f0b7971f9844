//! The random steps of the keyspace model: every way a key of ours is
//! written, moved or dropped.

use super::*;

impl Run<'_> {
    /// One random step of the kinds `KEYSPACE_KINDS` names (all by
    /// default); answers what it did.
    pub(super) fn random_step(&mut self) -> String {
        type Step = fn(&mut Run<'_>) -> String;
        const STEPS: &[(u32, &str, Step)] = &[
            (180, "ulist", |r| r.write_ulist()),
            (120, "hcounter", |r| r.write_hcounter()),
            (100, "topn", |r| r.write_topn()),
            (30, "set", |r| r.set_plain()),
            (50, "delete", |r| r.delete()),
            (120, "rename", |r| r.rename()),
            (60, "move", |r| r.move_db()),
            (60, "copy", |r| r.copy()),
            (50, "restore", |r| r.restore()),
            (30, "expire", |r| r.expire()),
            (20, "swapdb", |r| r.swapdb()),
            (30, "script", |r| r.rename_in_script()),
            (40, "multi", |r| r.multi()),
            (15, "flush", |r| r.flush()),
            (4, "flushes", |r| r.flushes()),
            (2, "swaps", |r| r.swaps()),
            (10, "reload", |r| r.reload()),
            (10, "loadaof", |r| r.load_aof()),
            (10, "evict", |r| r.evict()),
            (20, "lazyfree", |r| r.lazyfree()),
            (8, "resync", |r| r.resync(false)),
            (6, "abort", |r| r.resync(true)),
            (31, "tick", |r| r.tick()),
        ];
        let kinds = std::env::var("KEYSPACE_KINDS").unwrap_or_default();
        let allowed = |name: &str| kinds.is_empty() || kinds.split(',').any(|k| k == name);
        let total: u32 = STEPS.iter().filter(|s| allowed(s.1)).map(|s| s.0).sum();
        assert!(total > 0, "KEYSPACE_KINDS={kinds} names no step kind");
        let mut roll = self.rng.gen_range(0..total);
        for &(weight, name, step) in STEPS.iter().filter(|s| allowed(s.1)) {
            if roll < weight {
                self.log.push(format!("{}: ({name})", self.step));
                return step(self);
            }
            roll -= weight;
        }
        unreachable!("the roll is below the total")
    }

    fn write_ulist(&mut self) -> String {
        let p = self.place();
        match self.m.keys.get(&p) {
            None => {
                self.select(p.0);
                q_ok(self.c, &["ULIST.CREATE", &p.1, "VALUE", "v"]);
                self.m.keys.insert(
                    p.clone(),
                    Val::Ulist {
                        late: 0,
                        soon: Vec::new(),
                        never: 0,
                    },
                );
            }
            Some(Val::Ulist { .. }) => {}
            Some(_) => return format!("ulist write skipped at {p:?}"),
        }
        // Sometimes many values at once: a list past its compact layout,
        // whose free is big enough for a lazy free.
        let n = if self.rng.gen_bool(0.1) { 80 } else { 1 };
        let kind = self.rng.gen_range(0..3);
        let (expire, secs): (&[&str], i64) = match kind {
            0 => (&["EXPIRE", "3600"], 3600),
            1 => {
                let s = self.rng.gen_range(1..=3);
                (
                    if s == 1 {
                        &["EXPIRE", "1"]
                    } else if s == 2 {
                        &["EXPIRE", "2"]
                    } else {
                        &["EXPIRE", "3"]
                    },
                    s,
                )
            }
            _ => (&["NEVER"], 0),
        };
        self.select(p.0);
        let before = now_ms();
        let mut pipe = redis::pipe();
        for _ in 0..n {
            let value = format!("x{}", self.serial());
            let mut args = vec!["ULIST.ADD", p.1.as_str()];
            args.extend_from_slice(expire);
            args.extend(["v", value.as_str()]);
            pipe.add_command(cmd(&args)).ignore();
        }
        let _: () = pipe.query(self.c).expect("ULIST.ADD");
        if let Some(Val::Ulist { late, soon, never }) = self.m.keys.get_mut(&p) {
            match kind {
                0 => *late += n,
                1 => soon.extend(std::iter::repeat_n(before + secs * 1000, n)),
                _ => *never += n,
            }
        }
        format!("ULIST.ADD {p:?} x{n} {expire:?}")
    }

    fn write_hcounter(&mut self) -> String {
        let p = self.place();
        match self.m.keys.get(&p) {
            None => {
                let short = self.rng.gen_bool(0.4);
                self.select(p.0);
                let ttl = if short { "2" } else { "3600" };
                q_ok(
                    self.c,
                    &["HCOUNTER.CREATE", &p.1, "PARTITION", "day", "TTL", ttl],
                );
                self.m.keys.insert(
                    p.clone(),
                    Val::Hcounter {
                        short,
                        partitions: BTreeSet::new(),
                        alive_until: 0,
                    },
                );
            }
            Some(Val::Hcounter { .. }) => {}
            Some(_) => return format!("hcounter write skipped at {p:?}"),
        }
        let day = format!("d{}", self.rng.gen_range(0..4));
        self.select(p.0);
        let before = now_ms();
        let _: i64 = q(self.c, &["HCOUNTER.INCR", &p.1, "day", &day]);
        if let Some(Val::Hcounter {
            short,
            partitions,
            alive_until,
        }) = self.m.keys.get_mut(&p)
        {
            let ttl_ms = if *short { 2_000 } else { 3_600_000 };
            partitions.insert(day.clone());
            *alive_until = (*alive_until).max(before + ttl_ms);
        }
        format!("HCOUNTER.INCR {p:?} {day}")
    }

    fn write_topn(&mut self) -> String {
        let p = self.place();
        match self.m.keys.get(&p) {
            None | Some(Val::Topn) => {}
            Some(_) => return format!("topn write skipped at {p:?}"),
        }
        let member = format!("m{}", self.serial() % 50);
        self.select(p.0);
        let _: i64 = q(self.c, &["TOPN.INCR", &p.1, &member]);
        self.m.keys.insert(p.clone(), Val::Topn);
        format!("TOPN.INCR {p:?} {member}")
    }

    fn set_plain(&mut self) -> String {
        let p = self.place();
        self.select(p.0);
        q_ok(self.c, &["SET", &p.1, "plain"]);
        self.m.keys.insert(p.clone(), Val::Plain);
        format!("SET {p:?}")
    }

    fn delete(&mut self) -> String {
        let p = self.occupied();
        let how = if self.rng.gen_bool(0.5) {
            "DEL"
        } else {
            "UNLINK"
        };
        self.select(p.0);
        let _: i64 = q(self.c, &[how, &p.1]);
        self.m.take(&p);
        format!("{how} {p:?}")
    }

    /// RENAME or RENAMENX, to a name that may hold a key (ours or not).
    fn rename(&mut self) -> String {
        let from = self.occupied();
        let to = (from.0, format!("k{}", self.rng.gen_range(0..NAMES)));
        let nx = self.rng.gen_bool(0.3);
        let how = if nx { RENAMENX } else { RENAME };
        self.select(from.0);
        let done = self.query(&[how, &from.1, &to.1]);
        self.renamed(&from, &to, nx, done.is_ok());
        format!("{how} {from:?} -> {to:?}: {done:?}")
    }

    /// The model after a RENAME (`nx`: RENAMENX) that answered `ok`.
    fn renamed(&mut self, from: &Place, to: &Place, nx: bool, ok: bool) {
        if !ok || from == to || !self.m.keys.contains_key(from) {
            return;
        }
        if nx && self.m.keys.contains_key(to) {
            return;
        }
        let v = self.m.take(from).expect("checked");
        self.m.keys.insert(to.clone(), v);
    }

    fn move_db(&mut self) -> String {
        let from = self.occupied();
        let db = (from.0 + self.rng.gen_range(1..DBS)) % DBS;
        self.select(from.0);
        let moved: i64 = q(self.c, &["MOVE", &from.1, &db.to_string()]);
        if moved == 1 {
            let v = self.m.take(&from).expect("moved a key the model has");
            self.m.keys.insert((db, from.1.clone()), v);
        }
        format!("MOVE {from:?} {db}: {moved}")
    }

    fn copy(&mut self) -> String {
        let from = self.occupied();
        let to = self.place();
        let replace = self.rng.gen_bool(0.5);
        let mut args = vec!["COPY", from.1.as_str(), to.1.as_str()];
        let db = to.0.to_string();
        args.extend(["DB", db.as_str()]);
        if replace {
            args.push("REPLACE");
        }
        self.select(from.0);
        // An error when `to` is `from`.
        let copied = self.query(&args);
        if matches!(copied, Ok(Value::Int(1))) {
            let v = self.m.keys[&from].clone();
            self.m.keys.insert(to.clone(), v);
        }
        format!("COPY {from:?} {to:?} replace {replace}: {copied:?}")
    }

    fn restore(&mut self) -> String {
        let from = self.occupied();
        let to = self.place();
        self.select(from.0);
        let payload: Option<Vec<u8>> = q(self.c, &["DUMP", &from.1]);
        let Some(payload) = payload else {
            return format!("DUMP {from:?}: none");
        };
        let replace = self.rng.gen_bool(0.6);
        self.select(to.0);
        let mut restore = redis::cmd("RESTORE");
        restore.arg(&to.1).arg(0).arg(&payload);
        if replace {
            restore.arg("REPLACE");
        }
        let done: Result<Value, _> = restore.query(self.c);
        if done.is_ok() {
            let v = self.m.keys[&from].clone();
            self.m.keys.insert(to.clone(), v);
        }
        format!(
            "RESTORE {from:?} -> {to:?} replace {replace}: {}",
            done.is_ok()
        )
    }

    /// A key expires: PEXPIRE 1, then a read deletes it (as the expiry
    /// cycle would).
    fn expire(&mut self) -> String {
        let p = self.occupied();
        self.select(p.0);
        let set: i64 = q(self.c, &["PEXPIRE", &p.1, "1"]);
        std::thread::sleep(Duration::from_millis(3));
        let _: i64 = q(self.c, &["EXISTS", &p.1]);
        if set == 1 {
            self.m.take(&p);
        }
        format!("expire {p:?}")
    }

    fn swapdb(&mut self) -> String {
        let (a, b) = (self.rng.gen_range(0..DBS), self.rng.gen_range(0..DBS));
        self.swap(a, b);
        format!("SWAPDB {a} {b}")
    }

    fn swap(&mut self, a: i32, b: i32) {
        q_ok(self.c, &["SWAPDB", &a.to_string(), &b.to_string()]);
        let keys = std::mem::take(&mut self.m.keys);
        self.m.keys = keys
            .into_iter()
            .map(|((db, name), v)| {
                let db = if db == a {
                    b
                } else if db == b {
                    a
                } else {
                    db
                };
                ((db, name), v)
            })
            .collect();
    }

    fn rename_in_script(&mut self) -> String {
        let from = self.occupied();
        let to = (from.0, format!("k{}", self.rng.gen_range(0..NAMES)));
        self.select(from.0);
        let script = format!("return redis.call('{RENAME}', KEYS[1], KEYS[2])");
        let done = self.query(&["EVAL", &script, "2", &from.1, &to.1]);
        self.renamed(&from, &to, false, done.is_ok());
        format!("EVAL RENAME {from:?} -> {to:?}: {done:?}")
    }

    /// Renames and moves in one MULTI, queued before any runs (each planned
    /// on the model so none fails), sometimes a chain on one name (`RENAME a
    /// b`, `RENAME c a`, `RENAME a d`); sometimes followed by many renames of
    /// other keys.
    fn multi(&mut self) -> String {
        let flood = self.rng.gen_bool(0.3);
        self.multi_renames(flood)
    }

    fn multi_renames(&mut self, flood: bool) -> String {
        let db = self.rng.gen_range(0..DBS);
        self.select(db);
        let mut planned = self.m.keys.clone();
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut done = Vec::new();
        let rename = |pipe: &mut redis::Pipeline,
                      planned: &mut BTreeMap<Place, Val>,
                      from: &str,
                      to: &str| {
            pipe.cmd(RENAME).arg(from).arg(to).ignore();
            let v = planned.remove(&(db, from.to_string())).expect("listed");
            planned.insert((db, to.to_string()), v);
            format!("RENAME {from} {to}")
        };
        for _ in 0..self.rng.gen_range(1..5) {
            let names: Vec<String> = (planned.keys())
                .filter(|(d, _)| *d == db)
                .map(|(_, n)| n.clone())
                .collect();
            if names.is_empty() {
                break;
            }
            let pick = |rng: &mut StdRng| names[rng.gen_range(0..names.len())].clone();
            let from = pick(&mut self.rng);
            let roll = self.rng.gen_range(0..10);
            if roll < 3 && names.len() > 1 {
                // A chain: the name is renamed away, another key takes it
                // and is renamed away in turn.
                let other = loop {
                    let o = pick(&mut self.rng);
                    if o != from {
                        break o;
                    }
                };
                let (b, d) = (self.free_name(&planned, db), format!("c{}", self.serial()));
                done.push(rename(&mut pipe, &mut planned, &from, &b));
                done.push(rename(&mut pipe, &mut planned, &other, &from));
                done.push(rename(&mut pipe, &mut planned, &from, &d));
            } else if roll < 8 {
                let to = format!("k{}", self.rng.gen_range(0..NAMES));
                done.push(rename(&mut pipe, &mut planned, &from, &to));
            } else {
                let target = (db + self.rng.gen_range(1..DBS)) % DBS;
                pipe.cmd("MOVE").arg(&from).arg(target).ignore();
                if !planned.contains_key(&(target, from.clone())) {
                    let v = planned.remove(&(db, from.clone())).expect("listed");
                    planned.insert((target, from.clone()), v);
                }
                done.push(format!("MOVE {from} {target}"));
            }
        }
        if flood {
            for i in 0..70 {
                pipe.cmd("SET").arg(format!("flood{i}")).arg("x").ignore();
                pipe.cmd(RENAME)
                    .arg(format!("flood{i}"))
                    .arg(format!("flooded{i}"))
                    .ignore();
                pipe.cmd("DEL").arg(format!("flooded{i}")).ignore();
            }
        }
        let _: () = pipe.query(self.c).expect("MULTI ... EXEC");
        self.m.keys = planned;
        format!("MULTI in db {db}: {done:?}, flood {flood}")
    }

    /// A name of `k0`.. free in `db` of `planned`, else a new one.
    fn free_name(&mut self, planned: &BTreeMap<Place, Val>, db: i32) -> String {
        (0..NAMES)
            .map(|i| format!("k{i}"))
            .find(|n| !planned.contains_key(&(db, n.clone())))
            .unwrap_or_else(|| format!("c{}", self.serial()))
    }

    fn flush(&mut self) -> String {
        let mode = ["SYNC", "ASYNC"][self.rng.gen_range(0..2)];
        if self.rng.gen_bool(0.2) {
            q_ok(self.c, &["FLUSHALL", mode]);
            self.m.keys.clear();
            for db in 0..DBS {
                self.refill_plain_keys(db);
            }
            return format!("FLUSHALL {mode}");
        }
        let db = self.rng.gen_range(0..DBS);
        self.flush_db(db, mode);
        format!("FLUSHDB {db} {mode}")
    }

    fn flush_db(&mut self, db: i32, mode: &str) {
        self.select(db);
        q_ok(self.c, &["FLUSHDB", mode]);
        self.m.keys.retain(|(d, _), _| *d != db);
        self.refill_plain_keys(db);
    }

    /// A value of ours renamed in db 1, 2 or 3, then db 0 flushed and
    /// refilled (in one MULTI) every 300 ms, faster than a search of it
    /// takes, until the value is found: a search of the renamed key's db is
    /// not held back by another db's flushes.
    fn flushes(&mut self) -> String {
        let renamed = self.rename_owing(1..DBS);
        let started = Instant::now();
        let mut flushes = 0;
        while followed(self.c) != 0 {
            if started.elapsed() > SETTLE {
                let n = followed(self.c);
                self.fail(&format!(
                    "{n} values still followed after {SETTLE:?} of flushes of db 0\n"
                ));
            }
            self.select(0);
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("FLUSHDB")
                .arg(["SYNC", "ASYNC"][flushes % 2])
                .ignore();
            self.plain_keys_into(&mut pipe);
            let _: () = pipe.query(self.c).expect("FLUSHDB and refill");
            self.m.keys.retain(|(d, _), _| *d != 0);
            flushes += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
        // Later loads replay a short AOF, not every refill.
        let _: String = q(self.c, &["BGREWRITEAOF"]);
        wait_for_bg_done(self.master);
        format!("flushes: {renamed}, then db 0 flushed {flushes} times until it was found")
    }

    /// A value of ours renamed in db 3, then that db swapped with db 0
    /// after 1, 3 and 25 seconds, while it is searched for (a search of db
    /// 0 is over by then, a search of every db in turn not yet).
    fn swaps(&mut self) -> String {
        let renamed = self.rename_owing(3..DBS);
        for wait in [1, 2, 22] {
            std::thread::sleep(Duration::from_secs(wait));
            self.swap(0, 3);
        }
        format!("swaps: {renamed}, then SWAPDB 0 3 after 1, 3 and 25 s")
    }

    /// Renames a key of ours that surely owes work in one of `dbs` (made
    /// first when there is none) to a free name with `RENAMENX`.
    fn rename_owing(&mut self, dbs: std::ops::Range<i32>) -> String {
        let now = now_ms();
        let owing: Vec<Place> = (self.m.keys.iter())
            .filter(|((db, _), v)| dbs.contains(db) && matches!(v.owes(now), Owes::Surely(_)))
            .map(|(p, _)| p.clone())
            .collect();
        let from = if owing.is_empty() {
            let p = (
                dbs.end - 1,
                self.free_name(&self.m.keys.clone(), dbs.end - 1),
            );
            self.select(p.0);
            q_ok(self.c, &["ULIST.CREATE", &p.1, "VALUE", "v"]);
            let _: i64 = q(self.c, &["ULIST.ADD", &p.1, "EXPIRE", "3600", "v", "x"]);
            let v = Val::Ulist {
                late: 1,
                soon: Vec::new(),
                never: 0,
            };
            self.m.keys.insert(p.clone(), v);
            p
        } else {
            owing[self.rng.gen_range(0..owing.len())].clone()
        };
        let to = (from.0, self.free_name(&self.m.keys.clone(), from.0));
        self.select(from.0);
        let done: i64 = q(self.c, &[RENAMENX, &from.1, &to.1]);
        self.renamed(&from, &to, true, done == 1);
        format!("{RENAMENX} {from:?} -> {to:?}: {done}")
    }

    /// `DEBUG RELOAD`, sometimes followed by a MULTI of renames.
    fn reload(&mut self) -> String {
        q_ok(self.c, &["DEBUG", "RELOAD"]);
        self.after_load("DEBUG RELOAD")
    }

    /// The AOF replayed: renames and moves of keys of ours that no callback
    /// names the destination of.
    fn load_aof(&mut self) -> String {
        q_ok(self.c, &["DEBUG", "LOADAOF"]);
        self.after_load("DEBUG LOADAOF")
    }

    fn after_load(&mut self, load: &str) -> String {
        if self.rng.gen_bool(0.5) {
            format!("{load}, then {}", self.multi_renames(true))
        } else {
            load.into()
        }
    }

    /// Evicts some keys at random, then learns which went.
    fn evict(&mut self) -> String {
        let info: String = q(self.c, &["INFO", "memory"]);
        let used: i64 = info_field(&info, "used_memory")
            .and_then(|v| v.parse().ok())
            .expect("used_memory");
        q_ok(
            self.c,
            &["CONFIG", "SET", "maxmemory", &(used - 20_000).to_string()],
        );
        let _ = self.query(&["SET", "evict-trigger", "x"]);
        q_ok(self.c, &["CONFIG", "SET", "maxmemory", "0"]);
        let _ = self.query(&["DEL", "evict-trigger"]);
        let places: Vec<Place> = self.m.keys.keys().cloned().collect();
        let mut gone = 0;
        for p in places {
            self.select(p.0);
            if !exists(self.c, &p.1) {
                self.m.take(&p);
                gone += 1;
            }
        }
        format!("eviction: {gone} keys gone")
    }

    fn lazyfree(&mut self) -> String {
        let name = [
            "lazyfree-lazy-user-del",
            "lazyfree-lazy-server-del",
            "lazyfree-lazy-expire",
        ][self.rng.gen_range(0..3)];
        let on = ["no", "yes"][self.rng.gen_range(0..2)];
        q_ok(self.c, &["CONFIG", "SET", name, on]);
        format!("CONFIG SET {name} {on}")
    }

    /// The replica syncs in full again (a diskless swapdb load); `abort`:
    /// the first load is cut half-way (the master saves slowly, then drops
    /// the link), and the replica, detached, is checked before it loads again.
    fn resync(&mut self, abort: bool) -> String {
        let r = &mut self.replica.conn();
        let port = self.master.port.to_string();
        let mut aborted = false;
        // Slow loading that still serves clients, so the test sees it and
        // the master can drop the link half-way: 30 us a key, a few seconds
        // for the plain keys (a load started again after the link drops
        // runs as slowly, then ends).
        let slow = [
            ("key-load-delay", "30", "0"),
            ("loading-process-events-interval-bytes", "1024", "2097152"),
        ];
        if abort {
            for (name, value, _) in slow {
                q_ok(r, &["CONFIG", "SET", name, value]);
            }
            // Keys of no model, so the load takes a while whatever it holds.
            self.select(0);
            let mut fill = redis::pipe();
            for i in 0..FILLERS {
                fill.cmd("SET").arg(format!("filler{i}")).arg("x").ignore();
            }
            let _: () = fill.query(self.c).expect("fillers");
        }
        // The replica holds all the master wrote before it leaves (the
        // stream of plain keys written after a flush can be long).
        wait_for_sync(self.master, self.replica);
        q_ok(r, &["REPLICAOF", "NO", "ONE"]);
        q_ok(r, &["REPLICAOF", "127.0.0.1", &port]);
        if abort {
            // Redis 7.0 shows `loading:1` for it, later servers `async_loading:1`.
            let loading = wait_until(Duration::from_secs(5), || {
                let p = self.replica.info("persistence");
                ["loading", "async_loading"]
                    .iter()
                    .any(|f| info_field(&p, f).as_deref() == Some("1"))
            });
            let _: i64 = q(self.c, &["CLIENT", "KILL", "TYPE", "replica"]);
            // Refused (LOADING) until the replica has dropped the load.
            let detached = wait_until(SETTLE, || {
                cmd(&["REPLICAOF", "NO", "ONE"]).query::<()>(r).is_ok()
            });
            assert!(
                detached,
                "the replica stays loading:\n{}",
                self.replica.log()
            );
            for (name, _, default) in slow {
                q_ok(r, &["CONFIG", "SET", name, default]);
            }
            self.select(0);
            let mut unfill = redis::pipe();
            for i in 0..FILLERS {
                unfill.cmd("DEL").arg(format!("filler{i}")).ignore();
            }
            let _: () = unfill.query(self.c).expect("fillers");
            aborted = loading;
            // The temporary db is freed in the background.
            std::thread::sleep(Duration::from_millis(300));
            self.check_replica();
            q_ok(r, &["REPLICAOF", "127.0.0.1", &port]);
        }
        wait_for_sync(self.master, self.replica);
        self.check_replica();
        match (abort, aborted) {
            (false, _) => "resync: the replica loaded in full".into(),
            (true, true) => "aborted-load: a load aborted, the replica checked, then loaded".into(),
            (true, false) => "unaborted-load: the load ended before it could be cut".into(),
        }
    }

    fn tick(&mut self) -> String {
        let ms = self.rng.gen_range(1..120);
        std::thread::sleep(Duration::from_millis(ms));
        format!("sleep {ms} ms")
    }
}
