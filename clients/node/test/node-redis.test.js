// node-redis v5: the module's typed commands on a client (RESP2 and RESP3),
// in MULTI and pipelines, on a replica (read by ioredis too), and on a cluster.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { createClient, createCluster, ErrorReply, MultiErrorReply } = require('redis');
const { default: Redis } = require('ioredis');
const { recipes, recipesModules, Recipes, addRecipes, COMMANDS } = require('..');
const servers = require('./servers');
const everyFamily = require('./families');

let server;
test.before(async () => (server = await servers.start()));
test.after(() => server.stop());

for (const RESP of [2, 3]) {
  test(`every family, RESP${RESP}`, async () => {
    const client = await createClient({ url: server.url, RESP, modules: { recipes } }).connect();
    try {
      await client.flushAll();
      await everyFamily(client.recipes);
      // Recipes over the same client (raw replies, parsed by the package)
      await client.flushAll();
      await everyFamily(new Recipes(client));
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
      assert.match(e.message, /^ERR LAST must be an integer between 1 and the key's WINDOW \(\d+\), got 0$/);
      return true;
    });
    await assert.rejects(client.recipes.topnCreate('bad', { capacity: 10, views: [6] }), (e) => {
      assert.ok(e instanceof ErrorReply);
      assert.match(e.message, /^ERR VIEWS does not apply to a key with CAPACITY/);
      return true;
    });
    await assert.rejects(client.recipes.ulistAdd('nolist', { v: 1 }), /no such list/);
    // a failing command in MULTI: its ErrorReply among the others' replies
    await assert.rejects(client.multi().recipes.rvAdd('v', 'y').recipes.ulistAdd('nolist', { v: 1 }).exec(), (e) => {
      assert.ok(e instanceof MultiErrorReply);
      assert.equal(e.replies[0], 2);
      assert.ok(e.replies[1] instanceof ErrorReply);
      assert.equal(e.replies[1].message, 'ERR no such list; create it with ULIST.CREATE');
      return true;
    });
    await assert.rejects(client.multi().recipes.rvLen('v').recipes.topnTop('t', { last: 0 }).execAsPipeline(), ErrorReply);
  } finally {
    await client.close();
  }
});

test('one module per family, in MULTI and pipelines too, beside client.recipes', async () => {
  const client = await createClient({ url: server.url, modules: recipesModules }).connect();
  try {
    await client.flushAll();
    assert.equal(await client.topn.incr('t', 'a', { by: 2 }), 2);
    assert.deepEqual(await client.topn.topWithCounts('t'), await client.recipes.topnTopWithCounts('t'));
    const replies = await client.multi().rv.add('v', 'x').topn.count('t', ['a']).recipes.rvLen('v').set('plain', '1').exec();
    assert.deepEqual(replies, [1, [2], 1, 'OK']);
    assert.deepEqual(await client.multi().ulist.create('l', { value: 'v' }).ulist.add('l', { v: 1 }).execAsPipeline(), [true, true]);
    assert.deepEqual(Object.keys(recipesModules).sort(), ['hcounter', 'recipes', 'rv', 'tl', 'topn', 'ulist']);
  } finally {
    await client.close();
  }
});

test('TOPN.INFO keeps the fields it does not know, RESP2 and RESP3 alike', () => {
  const fields = [
    ['bucket', 60], ['window', 10], ['align', 0], ['members', 3], ['buckets', 1], ['memory', 900],
    ['views', 2], ['view-12-memory', 40], ['view-6-memory', 30], ['future-field', 7], ['future-words', ['a', 'b']],
  ];
  for (const raw of [fields.flat(), Object.fromEntries(fields), new Map(fields)]) {
    assert.deepEqual(COMMANDS.topnInfo.reply(raw), {
      ...{ bucket: 60, window: 10, align: 0, members: 3, buckets: 1, memory: 900 },
      ...{ views: [6, 12], viewMemory: { 6: 30, 12: 40 }, extra: { 'future-field': 7, 'future-words': ['a', 'b'] } },
    });
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
    const ioredis = addRecipes(new Redis(replica.port, '127.0.0.1'));
    try {
      assert.deepEqual(await ioredis.recipes.topnCount('rep', ['m']), [5]);
    } finally {
      ioredis.disconnect();
    }
  } finally {
    await master.close();
    await reader.close();
    replica.stop();
  }
});

test('a cluster routes each command, and a MULTI, by its key (RESP3)', async () => {
  const c = await servers.cluster();
  const cluster = await createCluster({
    rootNodes: [{ url: c.nodes[0].url }],
    RESP: 3,
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
    for (const user of ['ann', 'bob', 'cy']) {
      const replies = await cluster
        .multi()
        .recipes.hcounterCreate(`{${user}}:views`, { group: 'page' })
        .recipes.hcounterIncr(`{${user}}:views`, { page: 'home' })
        .recipes.hcounterData(`{${user}}:views`)
        .exec();
      assert.deepEqual(replies, [true, 1, [{ page: 'home', value: 1 }]]);
    }
    const moved = c.nodes.map((n) => n.cli('INFO', 'errorstats').match(/errorstat_MOVED:count=(\d+)/));
    assert.deepEqual(moved, [null, null, null], 'no MOVED redirections');
  } finally {
    await cluster.close();
    c.stop();
  }
});
