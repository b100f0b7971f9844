//! Planned failovers, which pause writes on the master while the roles
//! switch (the pause once aborted a master whose reclaim had due work):
//! `FAILOVER`, `CLUSTER FAILOVER` in a 3-master 3-replica cluster, and a
//! Sentinel failover followed by kill -9 of the new master. Writers of every
//! family run throughout, each write acknowledged with `WAIT 1`; items of
//! every reclaiming family fall due during the switch. Afterwards no server
//! crashed, every acknowledged write is held (and none beyond those sent),
//! the new master reclaims, and master and replica are equal.

use super::*;
use common::cluster::{key_slot, slot_owners, Cluster, ClusterClient};
use common::writers::*;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counted keys per family, keys with expiring items per reclaiming family,
/// and items per such key.
const KEYS: usize = 2;
const RECLAIM_KEYS: usize = 2;
const ITEMS: usize = 300;

/// On the master after a failover: every key holds at least its
/// acknowledged writes and at most those sent, and every key with expiring
/// items is reclaimed (its DUMP is its empty twin's). Returns the writes
/// acknowledged.
fn assert_kept_and_reclaimed(
    srv: &Server,
    keys: &[Counted],
    reclaiming: &[(String, Vec<u8>)],
    what: &str,
) -> u64 {
    let acknowledged = assert_kept(srv, keys, what);
    let c = &mut srv.conn();
    for (key, empty) in reclaiming {
        let done = wait_until(Duration::from_secs(60), || {
            dump(c, key).as_ref() == Some(empty)
        });
        assert!(
            done,
            "{what}: {key} not reclaimed (port {}):\n{}",
            srv.port,
            srv.info("recipes")
        );
    }
    acknowledged
}

/// Keys of every reclaiming family holding items due at `due`, with the
/// DUMP each has once its items are reclaimed.
fn reclaiming_keys(
    run: &mut dyn FnMut(&[redis::Cmd], &str),
    dump_of: &mut dyn FnMut(&str) -> Vec<u8>,
    prefix: &str,
    due: i64,
) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for fam in FAMILIES {
        let Some(reclaim) = &fam.reclaim else {
            continue;
        };
        let twin = format!("{prefix}twin:{}", fam.name);
        run(&(reclaim.create)(&twin), &twin);
        let empty = dump_of(&twin);
        for i in 0..RECLAIM_KEYS {
            let key = format!("{prefix}reclaim:{}:{i}", fam.name);
            run(&expiring_items(reclaim, &key, ITEMS, &[due]), &key);
            out.push((key, empty.clone()));
        }
    }
    assert!(!out.is_empty(), "no family reclaims");
    out
}

#[test]
fn failover_command_under_writers_with_reclaim_due() {
    let old = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "everysec")
        .start();
    let new = Server::builder().config("appendonly", "yes").start();
    q_ok(
        &mut new.conn(),
        &["REPLICAOF", "127.0.0.1", &old.port.to_string()],
    );
    wait_for_sync(&old, &new);
    let m = &mut old.conn();
    let keys = counted_keys("fo:", KEYS);
    for k in &keys {
        run_all(m, &(k.fam.tally.setup)(&k.key));
    }
    let due = now_ms() + 800;
    let reclaiming = reclaiming_keys(
        &mut |cmds, _| run_all(m, cmds),
        &mut |key| dump(&mut old.conn(), key).expect("twin"),
        "fo:",
        due,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&stop, old.conn(), keys, 1);
    // The switch while the items fall due.
    std::thread::sleep(Duration::from_millis(900));
    let started = Instant::now();
    q_ok(m, &["FAILOVER", "TIMEOUT", "10000"]);
    let switched = wait_until(Duration::from_secs(20), || {
        role(&old) == "slave" && role(&new) == "master"
    });
    assert!(switched, "roles did not switch:\n{}", old.log());
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let keys = writer.join().expect("writer");
    let acknowledged = assert_kept_and_reclaimed(&new, &keys, &reclaiming, "the new master");
    wait_for_sync(&new, &old);
    assert_same_digest(&new, &old);
    assert_no_crash(&old.log(), "the old master");
    assert_no_crash(&new.log(), "the new master");
    eprintln!(
        "FAILOVER: roles switched in {} ms under writers, {acknowledged} acknowledged writes \
         all held, {} keys with items due reclaimed by the new master, digests equal",
        took.as_millis(),
        reclaiming.len()
    );
}

/// The node on `port` as master, and its replica, by `ROLE`.
fn replica_of(nodes: &[Server], master: u16) -> &Server {
    nodes
        .iter()
        .find(|n| {
            let r: Vec<Value> = q(&mut n.conn(), &["ROLE"]);
            r.first() == Some(&Value::BulkString(b"slave".to_vec()))
                && r.get(2) == Some(&Value::Int(master as i64))
        })
        .unwrap_or_else(|| panic!("no replica of port {master}"))
}

#[test]
fn cluster_failover_under_writers_with_reclaim_due() {
    let cluster = Cluster::start_nodes(Server::builder, 1);
    // Every key in one slot (a hash tag), so one master and its replica hold them.
    let tag = "{cf}";
    let owner = slot_owners(&mut cluster.nodes[0].conn())[key_slot(tag.as_bytes())];
    let replica = replica_of(&cluster.nodes, owner);
    let master = cluster.node(owner);
    let mut client = ClusterClient::connect(&cluster);
    let keys = counted_keys(tag, KEYS);
    for k in &keys {
        for setup in (k.fam.tally.setup)(&k.key) {
            client.call(&setup, &k.key).expect("setup");
        }
    }
    let due = now_ms() + 800;
    let reclaiming = reclaiming_keys(
        &mut |cmds, key| {
            for k in cmds {
                client.call(k, key).expect("expiring items");
            }
        },
        &mut |key| dump(&mut master.conn(), key).expect("twin"),
        tag,
        due,
    );
    wait_for_sync(master, replica);
    // Every node knows the replica as such (the votes need it).
    let replica_id = common::cluster::node_id(replica);
    let known = wait_until(Duration::from_secs(30), || {
        cluster.nodes.iter().all(|n| {
            let nodes: String = q(&mut n.conn(), &["CLUSTER", "NODES"]);
            nodes
                .lines()
                .any(|l| l.starts_with(&replica_id) && l.contains("slave"))
        })
    });
    assert!(known, "the cluster never learned the replica");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&stop, ClusterClient::connect(&cluster), keys, 1);
    std::thread::sleep(Duration::from_millis(900));
    let started = Instant::now();
    q_ok(&mut replica.conn(), &["CLUSTER", "FAILOVER"]);
    let switched = wait_until(Duration::from_secs(30), || {
        role(replica) == "master" && role(master) == "slave"
    });
    assert!(
        switched,
        "CLUSTER FAILOVER did not switch the roles:\n{}\n{}",
        replica.log(),
        master.log()
    );
    let took = started.elapsed();
    // The writer goes on on the new master (MOVED), then stops.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let keys = writer.join().expect("writer");
    let acknowledged = assert_kept_and_reclaimed(replica, &keys, &reclaiming, "the new master");
    let after: u64 = keys.iter().map(|k| k.sent).sum();
    wait_for_sync(replica, master);
    assert_same_digest(replica, master);
    for node in &cluster.nodes {
        assert_no_crash(&node.log(), &format!("node {}", node.port));
    }
    eprintln!(
        "CLUSTER FAILOVER: roles switched in {} ms under a writer ({after} writes sent, \
         {acknowledged} acknowledged, all held), {} keys with items due reclaimed by the new \
         master, digests equal",
        took.as_millis(),
        reclaiming.len()
    );
}

/// A Sentinel process on a free loopback port, stopped (SIGKILL) on drop.
struct Sentinel {
    child: Child,
    port: u16,
    _dir: tempdir::Dir,
}

mod tempdir {
    /// A temp dir removed on drop.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Sentinel {
    fn start(master_port: u16) -> Sentinel {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("recipes-sentinel-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor mymaster 127.0.0.1 {master_port} 2\n\
                 sentinel down-after-milliseconds mymaster 1000\n\
                 sentinel failover-timeout mymaster 10000\n",
                dir.display()
            ),
        )
        .unwrap();
        // Debian's redis-sentinel, else the server binary in sentinel mode.
        let mut command = match which("redis-sentinel") {
            Some(bin) => Command::new(bin),
            None => {
                let mut c = Command::new(redis_server());
                c.arg("--sentinel");
                c
            }
        };
        let child = command
            .arg(&conf)
            .arg("--logfile")
            .arg(dir.join("sentinel.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sentinel");
        let s = Sentinel {
            child,
            port,
            _dir: tempdir::Dir(dir),
        };
        let up = wait_until(STARTUP_DEADLINE, || {
            s.conn()
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok()
        });
        assert!(up, "sentinel on port {port} did not start");
        s
    }

    fn conn(&self) -> redis::RedisResult<Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.port))?.get_connection()
    }

    /// The master Sentinel names now.
    fn master_port(&self) -> Option<u16> {
        let addr: Vec<String> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg("mymaster")
            .query(&mut self.conn().ok()?)
            .ok()?;
        addr.get(1)?.parse().ok()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn sentinel_failover_then_kill_9_of_the_new_master() {
    let mut servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    let first = servers[0].port;
    for s in &servers[1..] {
        q_ok(
            &mut s.conn(),
            &["REPLICAOF", "127.0.0.1", &first.to_string()],
        );
        wait_for_sync(&servers[0], s);
    }
    let sentinels: Vec<Sentinel> = (0..3).map(|_| Sentinel::start(first)).collect();
    let by_port =
        |servers: &[Server], port: u16| servers.iter().position(|s| s.port == port).unwrap();
    let agreed = |want: &dyn Fn(u16) -> bool| {
        wait_until(Duration::from_secs(30), || {
            sentinels.iter().all(|s| s.master_port().is_some_and(want))
        })
    };
    let m = &mut servers[0].conn();
    let keys = counted_keys("sn:", KEYS);
    for k in &keys {
        run_all(m, &(k.fam.tally.setup)(&k.key));
    }
    let due = now_ms() + 3_000;
    let reclaiming = reclaiming_keys(
        &mut |cmds, _| run_all(m, cmds),
        &mut |key| dump(&mut servers[0].conn(), key).expect("twin"),
        "sn:",
        due,
    );
    // Both replicas hold the setup before any failover: an unacknowledged
    // write may be lost with its master (a lagging replica can be promoted).
    let acked: i64 = q(m, &["WAIT", "2", "10000"]);
    assert_eq!(acked, 2, "the replicas never acknowledged the setup");
    // Sentinel sees the replicas before it can fail over to one.
    let known = wait_until(Duration::from_secs(30), || {
        let replicas: Vec<Value> = sentinels[0]
            .conn()
            .and_then(|mut c| {
                redis::cmd("SENTINEL")
                    .arg("REPLICAS")
                    .arg("mymaster")
                    .query(&mut c)
            })
            .unwrap_or_default();
        replicas.len() == 2
    });
    assert!(known, "sentinel never learned the replicas");

    // A planned failover under a writer.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&stop, servers[0].conn(), keys, 2);
    std::thread::sleep(Duration::from_millis(300));
    let _: Value = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg("mymaster")
        .query(&mut sentinels[0].conn().unwrap())
        .expect("SENTINEL FAILOVER");
    assert!(
        agreed(&|p| p != first),
        "the sentinels never named a new master"
    );
    let second = sentinels[0].master_port().unwrap();
    let switched = wait_until(Duration::from_secs(30), || {
        role(&servers[by_port(&servers, second)]) == "master"
    });
    assert!(switched, "port {second} never became master");
    stop.store(true, Ordering::SeqCst);
    let keys = writer.join().expect("writer");

    // A writer on the new master, which then dies (kill -9).
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&stop, servers[by_port(&servers, second)].conn(), keys, 2);
    std::thread::sleep(Duration::from_millis(500));
    let victim = by_port(&servers, second);
    servers[victim].crash();
    stop.store(true, Ordering::SeqCst);
    let keys = writer.join().expect("writer");
    assert!(agreed(&|p| p != second), "no master after the kill");
    let third = sentinels[0].master_port().unwrap();
    let promoted = &servers[by_port(&servers, third)];
    let up = wait_until(Duration::from_secs(30), || role(promoted) == "master");
    assert!(up, "port {third} never became master");
    let acknowledged =
        assert_kept_and_reclaimed(promoted, &keys, &reclaiming, "the master after the kill");
    for (i, s) in servers.iter().enumerate() {
        if i != victim {
            assert_no_crash(&s.log(), &format!("port {}", s.port));
        }
    }
    eprintln!(
        "Sentinel: SENTINEL FAILOVER {first} -> {second}, kill -9 of {second} -> {third}, \
         under writers: {acknowledged} acknowledged writes all held, {} keys with items due \
         reclaimed by the last master",
        reclaiming.len()
    );
}
