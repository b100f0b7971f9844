// One session over every command of the five families, on an empty
// database, through any of the package's ways in (a node-redis client's
// `recipes`, `Recipes`, `addRecipes`): each must give the same values.
'use strict';
const assert = require('node:assert/strict');

module.exports = async function everyFamily(r) {
  const now = Date.now();
  // RV
  assert.equal(await r.rvAdd('viewed', 'item:7', { maxlen: 30 }), 1);
  assert.equal(await r.rvAdd('viewed', 'item:9', { ttl: 3600 }), 2);
  assert.deepEqual(await r.rvGet('viewed', { limit: 10 }), ['item:9', 'item:7']);
  const times = await r.rvGetWithTimes('viewed');
  assert.deepEqual(times.map((t) => t.member), ['item:9', 'item:7']);
  assert.ok(times.every((t) => Number.isInteger(t.time) && t.time > 1.7e12));
  assert.equal(await r.rvAdd('viewed', 'item:1', { at: now - 60_000, pxat: now + 60_000 }), 3);
  assert.deepEqual(await r.rvGet('viewed', { since: now - 30_000 }), ['item:9', 'item:7']);
  assert.deepEqual((await r.rvGetWithTimes('viewed', { limit: 3 }))[2], { member: 'item:1', time: now - 60_000 });
  assert.equal(await r.rvRem('viewed', 'item:7', 'item:1', 'nope'), 2);
  assert.equal(await r.rvLen('viewed'), 1);
  // TL
  for (let i = 1; i <= 5; i++) await r.tlPush('timeline', `post:${i}`, { maxlen: 3 });
  assert.deepEqual(await r.tlRange('timeline'), ['post:5', 'post:4', 'post:3']);
  assert.deepEqual(await r.tlRange('timeline', { offset: 1, count: 1 }), ['post:4']);
  assert.equal(await r.tlRem('timeline', 'post:4'), 1);
  assert.equal(await r.tlLen('timeline'), 2);
  for (const item of ['a', 'b', 'a', 'a']) await r.tlPush('repeats', item, { maxlen: 10, slack: 2, ttl: 60 });
  assert.equal(await r.tlRem('repeats', 'a', { count: 2 }), 2);
  assert.deepEqual(await r.tlRange('repeats'), ['b', 'a']);
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
  // CAPACITY: counts with errors ("c" took "b"'s place: at most 3 too high)
  assert.equal(await r.topnCreate('capped', { capacity: 2 }), true);
  for (const [m, by] of [['a', 5], ['b', 3], ['c', 1]]) await r.topnIncr('capped', m, { by });
  assert.deepEqual(await r.topnTopWithErrors('capped'), [
    { member: 'a', count: 5, error: 0 },
    { member: 'c', count: 4, error: 3 },
  ]);
  assert.deepEqual(await r.topnTop24WithErrors('searches', { n: 1 }), [{ member: 'redis', count: 3, error: 0 }]);
  const capped = await r.topnInfo('capped');
  assert.deepEqual(capped, {
    ...{ bucket: 3600, window: 24, align: 0, members: 2, buckets: 1, memory: capped.memory },
    ...{ views: [], viewMemory: {}, extra: {}, capacity: 2, counters: 2, bound: 4, exact: false },
  });
  assert.deepEqual(await r.topnCountWithErrors('capped', ['b', 'c']), [
    { count: 4, error: 4 },
    { count: 4, error: 3 },
  ]);
  assert.deepEqual(await r.topnCount('searches', ['valkey', 'nope']), [1, 0]);
  // Many events at one time: an object, or pairs (a member twice: its final count twice)
  assert.deepEqual(await r.topnIncrBy('batch', { redis: 2, valkey: 1 }, { at: now }), [2, 1]);
  assert.deepEqual(await r.topnIncrBy('batch', [['redis', 1], ['kv', 4], ['redis', 3n]], { at: now }), [6, 4, 6]);
  await assert.rejects(r.topnIncrBy('batch', [['new', 1], ['redis', 2n ** 63n - 1n]], { at: now }), /argument 6/);
  assert.deepEqual(await r.topnCount('batch', ['new', 'redis'], { at: now }), [0, 6]);
  // INFO whole on a compact key: no views, no CAPACITY fields
  const info = await r.topnInfo('searches');
  assert.ok(info.memory > 0);
  assert.deepEqual(info, {
    ...{ bucket: 3600, window: 24, align: 0, members: 2, buckets: 1, memory: info.memory },
    ...{ views: [], viewMemory: {}, extra: {} },
  });
  // VIEWS 6 12 on a key of more entries than a compact key holds (so it is full)
  assert.equal(await r.topnCreate('dash', { bucket: 3600, window: 24, align: 1800, views: [12, 6] }), true);
  assert.equal(await r.topnCreate('dash', { bucket: 3600, window: 24, align: 1800, views: [6, 12] }), true);
  const events = Array.from({ length: 150 }, (_, i) => [`m${String(i).padStart(3, '0')}`, i + 1]);
  assert.equal((await r.topnIncrBy('dash', events, { at: now - 3 * 3_600_000 })).length, 150);
  assert.equal(await r.topnIncr('dash', 'now', { by: 500 }), 500);
  assert.deepEqual(await r.topnTopWithCounts('dash', { n: 2, last: 6 }), [
    { member: 'now', count: 500 },
    { member: 'm149', count: 150 },
  ]);
  assert.deepEqual(await r.topnTop('dash', { last: 1 }), ['now']);
  assert.deepEqual(await r.topnCount('dash', ['m000', 'now'], { last: 12 }), [1, 500]);
  const dash = await r.topnInfo('dash');
  assert.deepEqual([dash.align, dash.members, dash.buckets, dash.views], [1800, 151, 2, [6, 12]]);
  assert.deepEqual(Object.keys(dash.viewMemory), ['6', '12']);
  assert.ok(Object.values(dash.viewMemory).every((n) => n > 0 && n < dash.memory), JSON.stringify(dash));
  assert.deepEqual([dash.capacity, dash.exact, dash.extra], [undefined, undefined, {}]);
  // an hour ago, in a window of 2 buckets of an hour aligned at 30 minutes
  assert.equal(await r.topnCreate('recent', { bucket: 3600, window: 2, align: 1800 }), true);
  assert.equal(await r.topnIncr('recent', 'old', { by: 2, at: now - 3_600_000 }), 2);
  assert.equal(await r.topnIncr('recent', 'new', { at: now }), 1);
  assert.deepEqual(await r.topnCount('recent', ['old', 'new'], { at: now }), [2, 1]);
  assert.deepEqual(await r.topnCount('recent', ['old', 'new'], { at: now, last: 1 }), [0, 1]);
  assert.deepEqual(await r.topnTop('recent', { n: 1, at: now + 7_200_000 }), []);
  assert.equal((await r.topnInfo('recent')).align, 1800);
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
  assert.equal(await r.ulistCreate('sessions', { value: 'sid', expire: 600 }), true);
  assert.equal(await r.ulistAdd('sessions', { sid: 'a' }, { never: true }), true);
  assert.equal(await r.ulistAdd('sessions', { sid: 'b' }, { pxat: now + 60_000 }), true);
  assert.equal(await r.ulistAdd('sessions', { sid: 'c' }, { at: now - 700_000 }), true);
  assert.equal(await r.ulistAdd('sessions', { sid: 'a' }, { expire: 1, refresh: true, at: now - 5_000 }), false);
  assert.equal(await r.ulistHas('sessions', { sid: 'a' }), false, 'refreshed to an expiry already past');
  assert.deepEqual(await r.ulistData('sessions'), [{ sid: 'b' }]);
  // (expired values stay counted until the server's background reclaim)
  assert.ok((await r.ulistInfo('sessions'))['expiring values'] >= 1);
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
  const visitors = { partition: 'day', group: 'company', unique: ['company', 'user'], scope: 'month', ttl: 86_400 };
  assert.equal(await r.hcounterCreate('visitors', visitors), true);
  const visit = (day, user) => r.hcounterIncr('visitors', { day, company: 1, user, month: day.slice(0, 7) }, { at: now });
  assert.deepEqual([await visit('2024-01-10', 11), await visit('2024-01-11', 11), await visit('2024-02-01', 11)], [1, 0, 1]);
  assert.equal(await r.hcounterGet('visitors', { day: '2024-01-10', company: 1 }), 1);
  const declared = await r.hcounterInfo('visitors');
  assert.deepEqual(declared.declaration, [
    'PARTITION', 'day', 'GROUP', 'company', 'UNIQUE', 'company', 'user', 'SCOPE', 'month', 'TTL', '86400',
  ]);
  assert.equal(declared['unique tuples'], 2);
};
