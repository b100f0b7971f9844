// ioredis through Recipes: the typed commands on a client and a Cluster,
// pipelines and MULTI, and writers that survive a lost key.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { default: Redis, Cluster, ReplyError } = require('ioredis');
const { createClient } = require('redis');
const { Recipes, addRecipes } = require('..');
const servers = require('./servers');
const everyFamily = require('./families');

let server;
test.before(async () => (server = await servers.start()));
test.after(() => server.stop());

test('every family', async () => {
  const redis = addRecipes(new Redis(server.port, '127.0.0.1'));
  try {
    await redis.flushall();
    await everyFamily(redis.recipes);
  } finally {
    redis.disconnect();
  }
});

test('pipelines and MULTI parse each reply; errors are ReplyErrors', async () => {
  const redis = new Redis(server.port, '127.0.0.1');
  const rec = new Recipes(redis);
  try {
    await redis.flushall();
    await rec.topnCreate('t', { window: 12 });
    await rec.topnIncr('t', 'a', { by: 3 });
    // ioredis' [error, result] pairs, each result parsed
    const piped = await rec.pipeline().topnIncr('t', 'b').topnCount('t', ['a', 'b']).topnTop('t', { last: 0 }).exec();
    assert.deepEqual(piped[0], [null, 1]);
    assert.deepEqual(piped[1], [null, [3, 1]]);
    assert.ok(piped[2][0] instanceof ReplyError);
    const multi = await rec.pipeline(true).rvAdd('v', 'y').rvLen('v').hcounterData('none').exec();
    assert.deepEqual(multi, [[null, 1], [null, 1], [null, []]]);
    await assert.rejects(rec.topnCreate('t', { window: 12, views: [6] }), (e) => {
      assert.ok(e instanceof ReplyError);
      assert.match(e.message, /^ERR the key exists with another shape/);
      return true;
    });
    await assert.rejects(rec.topnIncr('t', 'a', { at: 1795564511 }), (e) => {
      assert.ok(e instanceof ReplyError);
      assert.match(e.message, /^ERR AT is Unix time in milliseconds/);
      return true;
    });
  } finally {
    redis.disconnect();
  }
});

test('commands and pipelines take the client\'s keyPrefix', async () => {
  const redis = addRecipes(new Redis(server.port, '127.0.0.1', { keyPrefix: 'app:' }));
  const admin = new Redis(server.port, '127.0.0.1');
  try {
    await admin.flushall();
    assert.equal(await redis.recipes.rvAdd('seen', 'x'), 1);
    assert.deepEqual(await redis.recipes.pipeline().tlPush('feed', 'a').rvLen('seen').exec(), [[null, 1], [null, 1]]);
    assert.deepEqual(await redis.pipeline().tl.push('feed', 'b').exec(), [[null, 2]]);
    assert.deepEqual((await admin.keys('*')).sort(), ['app:feed', 'app:seen']);
  } finally {
    redis.disconnect();
    admin.disconnect();
  }
});

test('a write recreates its declared key after DEL, FLUSHDB and eviction', async () => {
  for (const [name, client] of [
    ['ioredis', new Redis(server.port, '127.0.0.1')],
    ['node-redis', await createClient({ url: server.url }).connect()],
  ]) {
    const rec = new Recipes(client);
    const admin = new Redis(server.port, '127.0.0.1');
    try {
      await admin.flushall();
      await rec.ulistCreate('sessions', { value: 'sid', expire: 600 });
      await rec.hcounterCreate('hits', { partition: 'day', group: 'page' });
      const write = async () => {
        assert.equal(await rec.ulistAdd('sessions', { sid: 's1' }), true, name);
        assert.equal(await rec.hcounterIncr('hits', { day: 'd1', page: 'p' }), 1, name);
      };
      await write();
      await admin.del('sessions', 'hits');
      await write();
      await admin.flushdb();
      await write();
      await admin.config('SET', 'maxmemory-policy', 'allkeys-random');
      await admin.config('SET', 'maxmemory', '1');
      await assert.rejects(admin.set('trigger', 'x'));
      await admin.config('SET', 'maxmemory', '0');
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      assert.equal(await admin.exists('sessions', 'hits'), 0);
      await write();
      // An undeclared key's loss is the caller's to handle.
      await admin.del('sessions');
      await assert.rejects(new Recipes(client).ulistAdd('sessions', { sid: 's1' }), /no such list/);
      // A key created elsewhere, declared to this client.
      const other = new Recipes(client);
      other.declare('ulist', 'sessions', { value: 'sid', expire: 600 });
      assert.equal(await other.ulistAdd('sessions', { sid: 's1' }), true, name);
      assert.deepEqual((await other.ulistInfo('sessions')).declaration, ['VALUE', 'sid', 'EXPIRE', '600']);
    } finally {
      admin.disconnect();
      if (name === 'ioredis') client.disconnect();
      else await client.close();
    }
  }
});

test('ioredis pipelines and MULTI mix plain and recipes commands', async () => {
  const redis = addRecipes(new Redis(server.port, '127.0.0.1'));
  try {
    await redis.flushall();
    const pipe = redis.pipeline();
    pipe.set('plain', 'x');
    pipe.topn.incr('t', 'a', { by: 2 }).get('plain');
    pipe.topnTopWithCounts('t') // the flat names, as the pipelines of earlier releases had them
      .hcounter.data('none').topn.top('t', { last: 0 });
    const replies = await pipe.exec();
    assert.deepEqual(replies.slice(0, 5), [
      [null, 'OK'],
      [null, 2],
      [null, 'x'],
      [null, [{ member: 'a', count: 2 }]],
      [null, []],
    ]);
    assert.ok(replies[5][0] instanceof ReplyError && replies[5][1] === undefined);
    const multi = await redis.multi().incr('n').ulist.create('l', { value: 'v' }).ulist.add('l', { v: 1 }).incr('n').exec();
    assert.deepEqual(multi, [[null, 1], [null, true], [null, true], [null, 2]]);
    // a failing command inside MULTI: its error in its place, the others applied
    const failed = await redis.multi().rv.add('v', 'x').ulist.add('nolist', { v: 1 }).rv.len('v').exec();
    assert.deepEqual([failed[0], failed[2]], [[null, 1], [null, 1]]);
    assert.match(failed[1][0].message, /no such list/);
    // multi({ pipeline: false }) is ioredis' own MULTI, as before
    assert.equal(await redis.multi({ pipeline: false }), 'OK');
    assert.deepEqual(await redis.exec(), []);
  } finally {
    redis.disconnect();
  }
});

test('one namespace per family beside the flat names', async () => {
  const redis = addRecipes(new Redis(server.port, '127.0.0.1'));
  try {
    await redis.flushall();
    assert.equal(await redis.topn.incr('t', 'a', { by: 3 }), 3);
    assert.deepEqual(await redis.recipes.topn.topWithCounts('t'), [{ member: 'a', count: 3 }]);
    assert.equal(await redis.hcounter.create('c', { group: 'g' }), true);
    await redis.del('c');
    assert.equal(await redis.hcounter.incrBy('c', 2, { g: 'x' }), 2, 'the namespaces re-create lost keys too');
    assert.deepEqual(await redis.rv.getWithTimes('none'), []);
  } finally {
    redis.disconnect();
  }
});

test('paged reads see every row once', async () => {
  const redis = new Redis(server.port, '127.0.0.1');
  const rec = new Recipes(redis);
  try {
    await redis.flushall();
    await rec.ulistCreate('big', { value: 'v', scope: 's' });
    const pipe = rec.pipeline();
    for (let i = 0; i < 700; i++) pipe.ulistAdd('big', { v: i, s: i % 3 });
    await pipe.exec();
    for (const rows of [
      rec.pages('ulistDataPage', 'big', { count: 50 }),
      rec.ulist.iterData('big', { count: 50 }),
      rec.ulistIterData('big', { count: 70 }),
    ]) {
      const seen = [];
      for await (const row of rows) seen.push(`${row.s}/${row.v}`);
      assert.equal(seen.length, 700);
      assert.equal(new Set(seen).size, 700);
    }
    const scopes = [];
    for await (const row of rec.ulist.iterPartitions('big', { count: 1, where: { s: 1 } })) scopes.push(row);
    assert.deepEqual(scopes, [{ s: '1' }]);
    await rec.hcounterCreate('hits', { partition: 'day', group: 'page' });
    for (let i = 0; i < 30; i++) await rec.hcounter.incr('hits', { day: i % 3, page: i });
    let cells = 0;
    for await (const row of rec.hcounter.iterData('hits', { count: 4, where: { day: 1 } })) {
      assert.equal(row.day, '1');
      assert.equal(row.value, 1);
      cells++;
    }
    assert.equal(cells, 10);
    const days = [];
    for await (const row of rec.hcounter.iterPartitions('hits')) days.push(row.day);
    assert.deepEqual(days.sort(), ['0', '1', '2']);
  } finally {
    redis.disconnect();
  }
});

test('an ioredis Cluster sends each command to its key\'s node', async () => {
  const c = await servers.cluster();
  const cluster = new Cluster([{ host: '127.0.0.1', port: c.nodes[0].port }]);
  const prefixed = new Cluster([{ host: '127.0.0.1', port: c.nodes[1].port }], { keyPrefix: 'app:' });
  const rec = new Recipes(cluster);
  try {
    for (let i = 0; i < 30; i++) assert.equal(await rec.topnIncr(`board:${i}`, 'm', { by: i + 1 }), i + 1);
    for (let i = 0; i < 30; i++) assert.deepEqual(await rec.topnCount(`board:${i}`, ['m']), [i + 1]);
    for (let i = 0; i < 30; i++) assert.equal(await new Recipes(prefixed).rvAdd(`seen:${i}`, 'x'), 1);
    for (let i = 0; i < 30; i++) assert.equal(await rec.rvLen(`app:seen:${i}`), 1);
    const moved = c.nodes.map((n) => n.cli('INFO', 'errorstats').match(/errorstat_MOVED:count=(\d+)/));
    assert.deepEqual(moved, [null, null, null], 'no MOVED redirections');
  } finally {
    cluster.disconnect();
    prefixed.disconnect();
    c.stop();
  }
});
