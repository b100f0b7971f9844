// Counts past 2^53 (TOPN and integer HCOUNTER counts go to 2^63 - 1): exact
// bigints when the client hands integers over as strings, numbers otherwise.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { createClient, RESP_TYPES } = require('redis');
const { default: Redis } = require('ioredis');
const { recipes, addRecipes } = require('..');
const servers = require('./servers');

const BIG = 2n ** 53n + 1n;

let server;
test.before(async () => (server = await servers.start()));
test.after(() => server.stop());

/** Every kind of count reply, after one increment by BIG and one by 1. */
async function counts(r) {
  await r.topnCreate('top');
  await r.hcounterCreate('cells', { group: 'g' });
  return {
    topnIncr: [await r.topnIncr('top', 'big', { by: BIG }), await r.topnIncr('top', 'one')],
    topnCount: await r.topnCount('top', ['big', 'one']),
    topnTop: await r.topnTopWithCounts('top'),
    hcounterIncrBy: [await r.hcounterIncrBy('cells', BIG, { g: 'big' }), await r.hcounterIncr('cells', { g: 'one' })],
    hcounterGet: await r.hcounterGet('cells', { g: 'big' }),
    hcounterData: await r.hcounterData('cells'),
    topnInfo: (await r.topnInfo('top')).members,
  };
}

function expected(big) {
  return {
    topnIncr: [big, 1],
    topnCount: [big, 1],
    topnTop: [{ member: 'big', count: big }, { member: 'one', count: 1 }],
    hcounterIncrBy: [big, 1],
    hcounterGet: big,
    hcounterData: [{ g: 'big', value: big }, { g: 'one', value: 1 }],
    topnInfo: 2,
  };
}

for (const RESP of [2, 3]) {
  test(`node-redis RESP${RESP}: bigint with integers as strings, else number`, async () => {
    const client = await createClient({ url: server.url, RESP, modules: { recipes } }).connect();
    try {
      await client.flushAll();
      const exact = client.withTypeMapping({ [RESP_TYPES.NUMBER]: String });
      assert.deepEqual(await counts(exact.recipes), expected(BIG));
      await client.flushAll();
      assert.deepEqual(await counts(client.recipes), expected(Number(BIG)));
    } finally {
      await client.close();
    }
  });
}

test('ioredis: bigint with stringNumbers, else number', async () => {
  const exact = addRecipes(new Redis(server.port, '127.0.0.1', { stringNumbers: true }));
  const plain = addRecipes(new Redis(server.port, '127.0.0.1'));
  try {
    await exact.flushall();
    assert.deepEqual(await counts(exact.recipes), expected(BIG));
    await plain.flushall();
    assert.deepEqual(await counts(plain.recipes), expected(Number(BIG)));
  } finally {
    exact.disconnect();
    plain.disconnect();
  }
});
