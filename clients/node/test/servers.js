// Real servers for the tests: redis-server processes with the release module
// on free loopback ports, each with a startup deadline, stopped by pid.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const MODULE = process.env.RECIPES_MODULE || path.resolve(__dirname, '../../../target/release/librecipes.so');
const SERVER = process.env.REDIS_SERVER || 'redis-server';
const CLI = process.env.REDIS_CLI || 'redis-cli';
const STARTUP_DEADLINE_MS = 15_000;

function bindable(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.unref();
    s.on('error', () => resolve(0));
    s.listen(port, '127.0.0.1', () => {
      const found = s.address().port;
      s.close(() => resolve(found));
    });
  });
}

/** A free loopback port; for a cluster node one at most 55535 whose bus
 * port (+10000) is free too. */
async function freePort(clusterBus) {
  if (!clusterBus) return bindable(0);
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 35535);
    if ((await bindable(port)) && (await bindable(port + 10000))) return port;
  }
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      socket.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    socket.on('error', () => resolve(false));
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A redis-server with the module; `args` are more config lines. */
async function start(args = []) {
  if (!fs.existsSync(MODULE)) throw new Error(`no module at ${MODULE} (make build)`);
  // Another process may take the port between our check and the server's
  // bind: then the server exits, and we try another port.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort(args.includes('--cluster-enabled'));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recipes-node-'));
    const proc = spawn(
      SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
        '--repl-diskless-sync-delay', '0', '--loadmodule', MODULE, ...args],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const server = running(proc, port, dir);
    try {
      const deadline = Date.now() + STARTUP_DEADLINE_MS;
      while (proc.exitCode === null && Date.now() < deadline && !(await ping(port))) {
        await new Promise((r) => setTimeout(r, 50));
      }
      // the server answering must be the one we started
      const up = proc.exitCode === null && (await ping(port));
      if (up && server.cli('INFO', 'server').includes(`process_id:${proc.pid}\r`)) return server;
    } catch (error) {
      server.stop();
      throw error;
    }
    const exited = proc.exitCode !== null;
    server.stop();
    if (attempt === 5 || !exited) throw new Error(`redis-server did not start (last port ${port})`);
  }
}

/** Servers not stopped yet: killed when the test process exits whatever
 * way it ends (a failed hook, an uncaught error), so none outlives it. */
const live = new Set();
process.on('exit', () => live.forEach((server) => server.stop()));
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => process.exit(128 + os.constants.signals[signal]));
}

function running(proc, port, dir) {
  const server = {
    port,
    pid: proc.pid,
    url: `redis://127.0.0.1:${port}`,
    cli: (...a) => execFileSync(CLI, ['-p', String(port), ...a]).toString().trim(),
    stop() {
      live.delete(server);
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {}
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(server);
  return server;
}

/** A replica of `master`, once it is in sync. */
async function replicaOf(master) {
  const replica = await start(['--replicaof', '127.0.0.1', String(master.port)]);
  const deadline = Date.now() + 10_000;
  while (!replica.cli('INFO', 'replication').includes('master_link_status:up')) {
    if (Date.now() > deadline) throw new Error('the replica did not sync');
    await new Promise((r) => setTimeout(r, 50));
  }
  return replica;
}

/** A real 3-master cluster made with `redis-cli --cluster create`. */
async function cluster() {
  const nodes = [];
  for (let i = 0; i < 3; i++) {
    nodes.push(await start(['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${i}.conf`]));
  }
  execFileSync(CLI, ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes'], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 20_000;
  while (!nodes.every((n) => n.cli('CLUSTER', 'INFO').includes('cluster_state:ok'))) {
    if (Date.now() > deadline) throw new Error('the cluster did not form');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    nodes,
    stop: () => nodes.forEach((n) => n.stop()),
  };
}

module.exports = { start, replicaOf, cluster };
