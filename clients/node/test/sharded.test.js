// ShardedTopN on a real 3-node cluster, against exact counts kept here,
// through node-redis and ioredis alike.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { createCluster } = require('redis');
const { Cluster } = require('ioredis');
const { ShardedTopN, Recipes, shardTags, keySlot } = require('..');
const servers = require('./servers');

test('tags put each shard on its own node, as the Python package does', () => {
  // The Python package's tags (redis_recipes.sharded.shard_tags).
  assert.deepEqual(shardTags(3), ['0.62', '1.4', '2.41']);
  assert.deepEqual(shardTags(5), ['0.1', '1.7', '2.53', '3.32', '4.3']);
  const slots = shardTags(3).map((t) => keySlot(`{${t}}`));
  slots.forEach((s, i) => assert.ok(Math.abs(s - (i + 0.5) * (16384 / 3)) <= 16384 / 24, `${s}`));
  assert.equal(keySlot('foo'), 12182);
  assert.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'));
  assert.throws(() => shardTags(0), RangeError);
});

// Members whose order by UTF-16 units (JavaScript's <) is not their order by
// bytes (TOPN's), at the top with equal counts.
const ODD = ['\uff61', '\u{1f600}', 'é'];

test('a sharded top-N is exact on a cluster', async () => {
  const c = await servers.cluster();
  const nodeRedis = await createCluster({ rootNodes: [{ url: c.nodes[0].url }] }).connect();
  const ioredis = new Cluster([{ host: '127.0.0.1', port: c.nodes[1].port }]);
  // One unsharded key with every event: the server's own order, ties included.
  const whole = new Recipes(ioredis);
  try {
    const clients = [new ShardedTopN(nodeRedis, 'hot', 3), new ShardedTopN(ioredis, 'hot', 3)];
    await clients[0].create({ bucket: 60, window: 5, views: [2] });
    await assert.rejects(clients[1].create({ bucket: 60, window: 5 }), /VIEWS 2/);
    await whole.topnCreate('whole', { bucket: 60, window: 5 });
    const exact = new Map();
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    // Events in 4 one-minute buckets of a 5-bucket window, read at the newest
    // of them: a minute passing during the test leaves every event in.
    const base = Math.floor(Date.now() / 60000) * 60000 - 3 * 60000;
    const now = base + 3 * 60000;
    for (let i = 0; i < 600; i++) {
      const member = `m${Math.floor(random() ** 3 * 80)}`;
      const by = 1 + Math.floor(random() * 5);
      const at = base + Math.floor(random() * 4) * 60000;
      await clients[i % 2].incr(member, { by, at });
      await whole.topnIncr('whole', member, { by, at });
      exact.set(member, (exact.get(member) ?? 0) + by);
    }
    for (const member of ODD) {
      await clients[0].incr(member, { by: 500, at: base });
      await whole.topnIncr('whole', member, { by: 500, at: base });
      exact.set(member, 500);
    }
    const expected = [...exact]
      .map(([member, count]) => ({ member, count }))
      .sort((a, b) => b.count - a.count || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member)));
    assert.deepEqual(await whole.topnTopWithCounts('whole', { n: 100, at: now }), expected);
    for (const sharded of clients) {
      for (const n of [1, 5, 20, 100]) assert.deepEqual(await sharded.top({ n, at: now }), expected.slice(0, n));
      // LAST 5 on a 5-bucket window is the window; LAST 2 reads each shard's view.
      assert.deepEqual(await sharded.top({ n: 100, at: now, last: 5 }), expected);
      assert.deepEqual(
        await sharded.top({ n: 100, at: now, last: 2 }),
        await whole.topnTopWithCounts('whole', { n: 100, at: now, last: 2 }),
      );
      const asked = ['m0', 'm1', 'nope', 'm79'];
      assert.deepEqual(await sharded.count(asked, { at: now }), asked.map((m) => exact.get(m) ?? 0));
    }
    const perNode = c.nodes.map((n) => Number(n.cli('KEYS', 'hot:*').split('\n').length));
    assert.deepEqual(perNode, [1, 1, 1], 'one shard on each node');
  } finally {
    await nodeRedis.close();
    ioredis.disconnect();
    c.stop();
  }
});

test('a sharded top-N ranks counts past 2^53 as bigints', async () => {
  const c = await servers.cluster();
  const cluster = new Cluster([{ host: '127.0.0.1', port: c.nodes[2].port }], { redisOptions: { stringNumbers: true } });
  try {
    const big = new ShardedTopN(cluster, 'big', 3);
    await big.create();
    const huge = 2n ** 62n;
    await big.incr('huge', { by: huge });
    await big.incr('huger', { by: huge + 1n });
    for (const m of ['a', 'b', 'c']) await big.incr(m, { by: 7 });
    assert.deepEqual(await big.top({ n: 4 }), [
      { member: 'huger', count: huge + 1n },
      { member: 'huge', count: huge },
      { member: 'a', count: 7 },
      { member: 'b', count: 7 },
    ]);
    assert.deepEqual(await big.count(['c', 'huge', 'none']), [7, huge, 0]);
  } finally {
    cluster.disconnect();
    c.stop();
  }
});
