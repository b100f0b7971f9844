// node-redis v5: the module's typed commands on a client (RESP2 and RESP3),
// in MULTI and pipelines, on a replica, and on a cluster.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { createClient, createCluster, ErrorReply } = require('redis');
const { recipes } = require('..');
const servers = require('./servers');

let server;
test.before(async () => (server = await servers.start()));
test.after(() => server.stop());

for (const RESP of [2, 3]) {
  test(`every family, RESP${RESP}`, async () => {
    const client = await createClient({ url: server.url, RESP, modules: { recipes } }).connect();
    try {
      await client.flushAll();
      const r = client.recipes;
      // RV
      assert.equal(await r.rvAdd('viewed', 'item:7', { maxlen: 30 }), 1);
      assert.equal(await r.rvAdd('viewed', 'item:9', { ttl: 3600 }), 2);
      assert.deepEqual(await r.rvGet('viewed', { limit: 10 }), ['item:9', 'item:7']);
      const times = await r.rvGetWithTimes('viewed');
      assert.deepEqual(times.map((t) => t.member), ['item:9', 'item:7']);
      assert.ok(times.every((t) => Number.isInteger(t.time) && t.time > 1.7e12));
      assert.equal(await r.rvRem('viewed', 'item:7'), 1);
      assert.equal(await r.rvLen('viewed'), 1);
      // TL
      for (let i = 1; i <= 5; i++) await r.tlPush('timeline', `post:${i}`, { maxlen: 3 });
      assert.deepEqual(await r.tlRange('timeline'), ['post:5', 'post:4', 'post:3']);
      assert.equal(await r.tlRem('timeline', 'post:4'), 1);
      assert.equal(await r.tlLen('timeline'), 2);
      // TOPN
      assert.equal(await r.topnCreate('searches', { bucket: 3600, window: 24 }), true);
      assert.equal(await r.topnIncr('searches', 'redis', { by: 3 }), 3);
      assert.equal(await r.topnIncr('searches', 'valkey'), 1);
      assert.deepEqual(await r.topnTop('searches', { n: 5 }), ['redis', 'valkey']);
      assert.deepEqual(await r.topnTopWithCounts('searches', { n: 1, last: 1 }), [{ member: 'redis', count: 3 }]);
      assert.deepEqual(await r.topnTop24WithCounts('searches'), [
        { member: 'redis', count: 3 },
        { member: 'valkey', count: 1 },
      ]);
      assert.deepEqual(await r.topnTop24('searches', { n: 1 }), ['redis']);
      assert.deepEqual(await r.topnCount('searches', ['valkey', 'nope']), [1, 0]);
      const info = await r.topnInfo('searches');
      assert.equal(info.bucket, 3600);
      assert.equal(info.members, 2);
      // ULIST
      assert.equal(await r.ulistCreate('users', { value: 'user', scope: 'company', partition: 'day' }), true);
      assert.equal(await r.ulistAdd('users', { user: 7, company: 'acme', day: '2024-01-02' }), true);
      assert.equal(await r.ulistAdd('users', { user: 7, company: 'acme', day: '2024-01-03' }), false);
      assert.equal(await r.ulistAdd('users', { user: 8, company: 'acme', day: '2024-01-03' }, { expire: 60 }), true);
      assert.equal(await r.ulistHas('users', { user: 8, company: 'acme' }), true);
      assert.deepEqual(await r.ulistData('users', { day: '2024-01-02' }), [
        { user: '7', company: 'acme', day: '2024-01-02' },
      ]);
      assert.equal(await r.ulistCount('users', { company: 'acme' }), 2);
      assert.deepEqual(await r.ulistPartitions('users'), [
        { company: 'acme', day: '2024-01-02' },
        { company: 'acme', day: '2024-01-03' },
      ]);
      const page = await r.ulistDataPage('users', '0', { count: 5 });
      assert.equal(page.cursor, '0');
      assert.equal(page.rows.length, 2);
      assert.equal((await r.ulistPartitionsPage('users', '0', { count: 1 })).rows.length, 1);
      assert.deepEqual((await r.ulistInfo('users')).declaration, ['VALUE', 'user', 'SCOPE', 'company', 'PARTITION', 'day']);
      assert.equal(await r.ulistDel('users', { day: '2024-01-02' }), 1);
      // HCOUNTER
      assert.equal(await r.hcounterCreate('views', { partition: 'day', group: 'city' }), true);
      assert.equal(await r.hcounterIncr('views', { day: '2024-01-02', city: 'paris' }), 1);
      assert.equal(await r.hcounterIncrBy('views', 4, { day: '2024-01-02', city: 'paris' }), 5);
      assert.equal(await r.hcounterGet('views', { day: '2024-01-02', city: 'paris' }), 5);
      assert.equal(await r.hcounterGet('views', { day: '2024-01-02', city: 'rome' }), 0);
      assert.deepEqual(await r.hcounterData('views'), [{ day: '2024-01-02', city: 'paris', value: 5 }]);
      assert.deepEqual(await r.hcounterPartitions('views'), [{ day: '2024-01-02' }]);
      assert.deepEqual((await r.hcounterDataPage('views', '0')).rows, [{ day: '2024-01-02', city: 'paris', value: 5 }]);
      assert.equal((await r.hcounterPartitionsPage('views')).cursor, '0');
      assert.equal((await r.hcounterInfo('views')).partitions, 1);
      assert.equal(await r.hcounterCreate('money', { group: 'shop', float: true }), true);
      assert.equal(await r.hcounterIncrBy('money', 2.5, { shop: 'a' }), 2.5);
      assert.deepEqual(await r.hcounterData('money'), [{ shop: 'a', value: 2.5 }]);
      assert.equal(await r.hcounterDel('views', { day: '2024-01-02' }), 1);
    } finally {
      await client.close();
    }
  });
}

test('MULTI and pipelines parse each reply; errors carry the server text', async () => {
  const client = await createClient({ url: server.url, modules: { recipes } }).connect();
  try {
    await client.flushAll();
    const replies = await client
      .multi()
      .recipes.topnIncr('t', 'a', { by: 2 })
      .recipes.topnTopWithCounts('t')
      .recipes.rvAdd('v', 'x')
      .exec();
    assert.deepEqual(replies, [2, [{ member: 'a', count: 2 }], 1]);
    const piped = await client.multi().recipes.topnCount('t', ['a']).recipes.rvGet('v').execAsPipeline();
    assert.deepEqual(piped, [[2], ['x']]);
    await assert.rejects(client.recipes.topnTop('t', { last: 0 }), (e) => {
      assert.ok(e instanceof ErrorReply);
      assert.equal(e.message, "ERR LAST must be an integer between 1 and the key's WINDOW");
      return true;
    });
    await assert.rejects(client.recipes.ulistAdd('nolist', { v: 1 }), /no such list/);
  } finally {
    await client.close();
  }
});

test('counts past 2^53 come as bigint when numbers come as strings', async () => {
  const { RESP_TYPES } = require('redis');
  const { default: Redis } = require('ioredis');
  const { Recipes } = require('..');
  const big = 2n ** 53n + 1n;
  const client = await createClient({ url: server.url, modules: { recipes } }).connect();
  const strings = client.withTypeMapping({ [RESP_TYPES.NUMBER]: String });
  const ioredis = new Redis(server.port, '127.0.0.1', { stringNumbers: true });
  try {
    await client.recipes.hcounterCreate('big', { group: 'g' });
    assert.equal(await strings.recipes.hcounterIncrBy('big', big.toString(), { g: 'x' }), big);
    assert.equal(await new Recipes(ioredis).hcounterGet('big', { g: 'x' }), big);
    assert.deepEqual(await strings.recipes.hcounterData('big'), [{ g: 'x', value: big }]);
    // Without the mapping, a number as JavaScript has it.
    assert.equal(await client.recipes.hcounterGet('big', { g: 'x' }), Number(big));
  } finally {
    await client.close();
    ioredis.disconnect();
  }
});

test('writes replicate; a replica answers the reads', async () => {
  const replica = await servers.replicaOf(server);
  const master = await createClient({ url: server.url, modules: { recipes } }).connect();
  const reader = await createClient({ url: replica.url, modules: { recipes } }).connect();
  try {
    await master.recipes.topnIncr('rep', 'm', { by: 5 });
    await master.sendCommand(['WAIT', '1', '5000']);
    assert.deepEqual(await reader.recipes.topnTopWithCounts('rep'), [{ member: 'm', count: 5 }]);
    await assert.rejects(reader.recipes.topnIncr('rep', 'm'), /READONLY/);
  } finally {
    await master.close();
    await reader.close();
    replica.stop();
  }
});

test('a cluster routes each command by its key', async () => {
  const c = await servers.cluster();
  const cluster = await createCluster({
    rootNodes: [{ url: c.nodes[0].url }],
    modules: { recipes },
  }).connect();
  try {
    for (let i = 0; i < 30; i++) {
      assert.equal(await cluster.recipes.topnIncr(`board:${i}`, 'm', { by: i + 1 }), i + 1);
      assert.equal(await cluster.recipes.rvAdd(`seen:${i}`, 'x'), 1);
    }
    for (let i = 0; i < 30; i++) {
      assert.deepEqual(await cluster.recipes.topnCount(`board:${i}`, ['m']), [i + 1]);
    }
    const keys = c.nodes.map((n) => Number(n.cli('DBSIZE')));
    assert.ok(keys.every((k) => k > 0), `keys per node ${keys}`);
  } finally {
    await cluster.close();
    c.stop();
  }
});
