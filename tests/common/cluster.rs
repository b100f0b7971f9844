//! A real Redis Cluster of three masters made with `redis-cli --cluster
//! create` (the cli of the server under test: `REDIS_CLI`), and a small
//! cluster client that follows MOVED and ASK as cluster clients do.
//!
//! ```ignore
//! let mut cluster = Cluster::start();
//! let (reply, moved) = cluster.call(&["RV.ADD", "k", "m"]); // via the first node
//! let mut client = ClusterClient::connect(&cluster.ports());  // routes by slot
//! let v = client.call(&cmd(&["RV.LEN", "k"]), "k")?;
//! ```

use super::{cmd, err_text, q, q_ok, redis_cli, wait_until, Server, ServerBuilder};
use redis::{Connection, Value};
use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

pub const SLOTS: usize = 16384;

pub struct Cluster {
    pub nodes: Vec<Server>,
    conns: HashMap<u16, Connection>,
}

impl Cluster {
    pub fn start() -> Cluster {
        Cluster::start_with(Server::builder)
    }

    /// [`Cluster::start`] with nodes from `builder` (e.g. another binary).
    pub fn start_with(builder: impl Fn() -> ServerBuilder) -> Cluster {
        Cluster::start_nodes(builder, 0)
    }

    /// Three masters with `replicas` replicas each (`--cluster-replicas`).
    pub fn start_nodes(builder: impl Fn() -> ServerBuilder, replicas: usize) -> Cluster {
        let nodes: Vec<Server> = (0..3 * (1 + replicas))
            .map(|_| {
                builder()
                    .config("cluster-enabled", "yes")
                    .config("cluster-config-file", "nodes.conf")
                    .config("cluster-node-timeout", "5000")
                    .start()
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new(redis_cli())
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string()])
            .arg("--cluster-yes")
            .output()
            .unwrap_or_else(|e| panic!("run {} --cluster create: {e}", redis_cli()));
        assert!(
            out.status.success(),
            "cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster {
            conns: nodes.iter().map(|n| (n.port, n.conn())).collect(),
            nodes,
        };
        cluster.wait_ok();
        cluster
    }

    /// Waits until every node reports `cluster_state:ok` and the same slot
    /// owners (panics after 20 s).
    pub fn wait_ok(&self) {
        let ready = wait_until(Duration::from_secs(20), || {
            let ok = self.nodes.iter().all(|n| {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut n.conn())
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
            });
            ok && self
                .nodes
                .iter()
                .all(|n| slot_owners(&mut n.conn()) == slot_owners(&mut self.nodes[0].conn()))
        });
        assert!(ready, "cluster did not reach cluster_state:ok");
    }

    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The node listening on `port`.
    pub fn node(&self, port: u16) -> &Server {
        self.nodes
            .iter()
            .find(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    /// Moves `slot` to the node on port `to` by hand, as `redis-cli --cluster
    /// reshard` does: IMPORTING on the target, MIGRATING on the source,
    /// MIGRATE of its keys, then the new owner set on every node.
    pub fn move_slot(&self, slot: usize, to: u16) {
        let from = slot_owners(&mut self.nodes[0].conn())[slot];
        let (src, dst) = (&mut self.node(from).conn(), &mut self.node(to).conn());
        let (from_id, to_id) = (node_id(self.node(from)), node_id(self.node(to)));
        let slot = slot.to_string();
        q_ok(dst, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        q_ok(src, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        loop {
            let keys: Vec<String> = q(src, &["CLUSTER", "GETKEYSINSLOT", &slot, "100"]);
            if keys.is_empty() {
                break;
            }
            let port = to.to_string();
            let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            migrate.extend(keys.iter().map(String::as_str));
            q_ok(src, &migrate);
        }
        for node in &self.nodes {
            q_ok(
                &mut node.conn(),
                &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id],
            );
        }
    }

    /// Sends `args` to the first node and follows one MOVED redirect, as a
    /// cluster client does. Returns the reply and whether it was redirected.
    pub fn call(&mut self, args: &[&str]) -> (Value, bool) {
        let first = self.nodes[0].port;
        match cmd(args).query::<Value>(self.conns.get_mut(&first).unwrap()) {
            Ok(v) => (v, false),
            Err(e) => {
                let text = err_text(&e);
                let target = text
                    .strip_prefix("MOVED ")
                    .and_then(redirect_port)
                    .unwrap_or_else(|| panic!("{args:?}: {text}"));
                let conn = self.conns.get_mut(&target).expect("known node");
                let v = cmd(args)
                    .query::<Value>(conn)
                    .unwrap_or_else(|e| panic!("{args:?} on {target}: {}", err_text(&e)));
                (v, true)
            }
        }
    }
}

/// The node id of the server on `port` (`CLUSTER MYID`).
pub fn node_id(srv: &Server) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut srv.conn())
        .expect("CLUSTER MYID")
}

/// The port in the `<slot> <host>:<port>` tail of a MOVED or ASK error.
fn redirect_port(rest: &str) -> Option<u16> {
    rest.rsplit(':').next()?.trim().parse().ok()
}

/// Port of the node owning each of the 16384 slots, from `CLUSTER SLOTS`.
pub fn slot_owners(c: &mut Connection) -> Vec<u16> {
    let ranges: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(c).unwrap();
    let mut owners = vec![0u16; SLOTS];
    for range in ranges {
        let Value::Array(parts) = range else {
            panic!("CLUSTER SLOTS: {range:?}")
        };
        let start: usize = redis::from_redis_value(&parts[0]).unwrap();
        let end: usize = redis::from_redis_value(&parts[1]).unwrap();
        let Value::Array(master) = &parts[2] else {
            panic!("CLUSTER SLOTS master")
        };
        let port: u16 = redis::from_redis_value(&master[1]).unwrap();
        owners[start..=end].fill(port);
    }
    owners
}

/// The hash slot of `key` (CRC16/XMODEM of the key or its `{hash tag}`), as
/// `CLUSTER KEYSLOT` answers it.
pub fn key_slot(key: &[u8]) -> usize {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    let mut crc = 0u16;
    for &b in tagged.unwrap_or(key) {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    usize::from(crc) % SLOTS
}

/// A cluster client for one thread: a connection per node, the slot owners
/// it last learned, and MOVED / ASK followed as a cluster client does (so it
/// keeps writing while slots move).
pub struct ClusterClient {
    conns: HashMap<u16, Connection>,
    owners: Vec<u16>,
    /// MOVED and ASK replies followed so far.
    pub redirects: usize,
}

impl ClusterClient {
    pub fn connect(cluster: &Cluster) -> ClusterClient {
        ClusterClient {
            conns: cluster.nodes.iter().map(|n| (n.port, n.conn())).collect(),
            owners: slot_owners(&mut cluster.nodes[0].conn()),
            redirects: 0,
        }
    }

    /// The connection to the node this client believes owns `key`.
    pub fn owner_conn(&mut self, key: &str) -> &mut Connection {
        let port = self.owners[key_slot(key.as_bytes())];
        self.conns.get_mut(&port).expect("known node")
    }

    /// Runs `k` (whose key is `key`) on the key's owner, following MOVED
    /// (and remembering it) and ASK (`ASKING`, then the command, on the
    /// node importing the slot). An error reply that is not a redirect, or a
    /// lost connection, is returned.
    pub fn call(&mut self, k: &redis::Cmd, key: &str) -> redis::RedisResult<Value> {
        let slot = key_slot(key.as_bytes());
        let mut port = self.owners[slot];
        let mut asking = false;
        for _ in 0..10 {
            let conn = self.conns.get_mut(&port).expect("known node");
            let reply = if asking {
                let mut p = redis::pipe();
                p.cmd("ASKING").ignore().add_command(k.clone());
                p.query::<Vec<Value>>(conn)
                    .map(|mut v| v.pop().unwrap_or(Value::Nil))
            } else {
                k.query::<Value>(conn)
            };
            let e = match reply {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let text = err_text(&e);
            if let Some(to) = text.strip_prefix("MOVED ").and_then(redirect_port) {
                self.owners[slot] = to;
                (port, asking) = (to, false);
            } else if let Some(to) = text.strip_prefix("ASK ").and_then(redirect_port) {
                (port, asking) = (to, true);
            } else {
                return Err(e);
            }
            self.redirects += 1;
        }
        panic!("{key}: more than 10 redirects");
    }
}
