// Bytes in, bytes out: members, items, values and declared names that are
// not UTF-8 come back exactly as stored, as Buffers, in every family, where
// node-redis' type mapping (BLOB_STRING -> Buffer, RESP2 and RESP3) or an
// ioredis / Recipes `*Buffer` method asks for them. Rows key their values by
// name (a string, as object keys are); ULIST.INFO and HCOUNTER.INFO give the
// declared names' own bytes.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { createClient, RESP_TYPES } = require('redis');
const { default: Redis } = require('ioredis');
const { recipesModules, Recipes, addRecipes, ShardedTopN } = require('..');
const servers = require('./servers');

const BINARY = Buffer.from([0xff, 0x00, 0xfe]);
const OTHER = Buffer.from([0x80, 0x3a, 0x00]);
const NAME = Buffer.from([0xfe, 0x6e]); // a declared name that is not UTF-8
const T0 = 1_700_000_000_000;

let server;
test.before(async () => (server = await servers.start()));
test.after(() => server.stop());

/** Every family through `r`, whose methods give Buffers (`b(name)` names
 * the method: `top` or `topBuffer`). */
async function everyFamily(r, b) {
  // RV
  assert.equal(await r.rv.add('viewed', BINARY, { at: T0 }), 1);
  assert.equal(await r.rv.add('viewed', OTHER, { at: T0 + 1 }), 2);
  assert.deepEqual(await r.rv[b('get')]('viewed'), [OTHER, BINARY]);
  assert.deepEqual(await r.rv[b('getWithTimes')]('viewed'), [
    { member: OTHER, time: T0 + 1 },
    { member: BINARY, time: T0 },
  ]);
  // TL
  await r.tl.push('timeline', BINARY);
  await r.tl.push('timeline', OTHER);
  assert.deepEqual(await r.tl[b('range')]('timeline'), [OTHER, BINARY]);
  // TOPN
  assert.equal(await r.topn.incr('top', BINARY, { by: 3 }), 3);
  assert.deepEqual(await r.topn.incrBy('top', [[OTHER, 1]]), [1]);
  assert.deepEqual(await r.topn[b('top')]('top'), [BINARY, OTHER]);
  assert.deepEqual(await r.topn[b('topWithCounts')]('top'), [
    { member: BINARY, count: 3 },
    { member: OTHER, count: 1 },
  ]);
  assert.deepEqual(await r.topn[b('top24WithErrors')]('top', { n: 1 }), [{ member: BINARY, count: 3, error: 0 }]);
  assert.deepEqual(await r.topn.count('top', [BINARY, OTHER]), [3, 1]);
  // ULIST: values of any bytes, a name of any bytes
  assert.equal(await r.ulist.create('l', { value: [NAME, 'v'], partition: 'p' }), true);
  assert.equal(await r.ulist.add('l', [[NAME, BINARY], ['v', OTHER], ['p', BINARY]]), true);
  assert.equal(await r.ulist.add('l', [[NAME, BINARY], ['v', OTHER], ['p', OTHER]]), false);
  assert.equal(await r.ulist.has('l', [[NAME, BINARY], ['v', OTHER]]), true);
  const [row] = await r.ulist[b('data')]('l');
  assert.deepEqual([row.v, row.p, row[NAME.toString()]], [OTHER, BINARY, BINARY]);
  assert.deepEqual(await r.ulist[b('partitions')]('l'), [{ p: BINARY }]);
  assert.deepEqual((await r.ulist[b('info')]('l')).declaration, [
    Buffer.from('VALUE'), NAME, Buffer.from('v'), Buffer.from('PARTITION'), Buffer.from('p'),
  ]);
  // HCOUNTER
  assert.equal(await r.hcounter.create('c', { partition: 'day', group: NAME }), true);
  assert.equal(await r.hcounter.incrBy('c', 4, [['day', BINARY], [NAME, OTHER]]), 4);
  assert.equal(await r.hcounter.get('c', [['day', BINARY], [NAME, OTHER]]), 4);
  const [cell] = await r.hcounter[b('data')]('c');
  assert.deepEqual([cell.day, cell[NAME.toString()], cell.value], [BINARY, OTHER, 4]);
  assert.deepEqual(await r.hcounter[b('partitions')]('c'), [{ day: BINARY }]);
  assert.deepEqual((await r.hcounter[b('info')]('c')).declaration, [
    Buffer.from('PARTITION'), Buffer.from('day'), Buffer.from('GROUP'), NAME,
  ]);
}

for (const RESP of [2, 3]) {
  test(`node-redis RESP${RESP}: BLOB_STRING -> Buffer gives every byte, modules and Recipes alike`, async () => {
    const client = await createClient({ url: server.url, RESP, modules: recipesModules }).connect();
    try {
      await client.flushAll();
      await everyFamily(client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }), (name) => name);
      await client.flushAll();
      await everyFamily(new Recipes(client), (name) => `${name}Buffer`);
      // paged reads too, and the flat names
      const rows = [];
      for await (const row of new Recipes(client).ulist.iterDataBuffer('l', { count: 1 })) rows.push(row);
      assert.deepEqual(rows.map((row) => row.v), [OTHER]);
      const flat = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).recipes;
      assert.deepEqual(await flat.topnTop('top'), [BINARY, OTHER]);
    } finally {
      await client.close();
    }
  });
}

test('ioredis: the *Buffer methods give every byte, in pipelines too', async () => {
  const redis = addRecipes(new Redis(server.port, '127.0.0.1'));
  try {
    await redis.flushall();
    await everyFamily(redis.recipes, (name) => `${name}Buffer`);
    const replies = await redis.pipeline().topn.topBuffer('top').getBuffer('nothing').rv.getBuffer('viewed').exec();
    assert.deepEqual(replies, [[null, [BINARY, OTHER]], [null, null], [null, [OTHER, BINARY]]]);
    const rows = [];
    for await (const row of redis.hcounter.iterDataBuffer('c')) rows.push(row.day);
    assert.deepEqual(rows, [BINARY]);
  } finally {
    redis.disconnect();
  }
});

test('ShardedTopN ranks and returns members by their bytes', async () => {
  const redis = new Redis(server.port, '127.0.0.1');
  try {
    await redis.flushall();
    const hot = new ShardedTopN(redis, 'hot', 4);
    for (const member of [BINARY, OTHER, Buffer.from('a')]) await hot.incr(member, { by: 2 });
    assert.deepEqual(await hot.topBuffer({ n: 2 }), [
      { member: Buffer.from('a'), count: 2 },
      { member: OTHER, count: 2 },
    ]);
    assert.equal((await hot.topBuffer()).length, 3);
  } finally {
    redis.disconnect();
  }
});
