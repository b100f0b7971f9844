// The package's declarations (dist/*.d.ts) as a TypeScript user meets them:
// `npm test` type-checks this file first (never run). Each
// `@ts-expect-error` must stay an error, so a loosened type fails the check.
import { createClient, createCluster, RESP_TYPES } from 'redis';
import Redis, { Cluster } from 'ioredis';
import { recipes, recipesModules, addRecipes, Recipes, ShardedTopN, Count, Row, Page, TopnInfo } from '..';

export async function nodeRedis(): Promise<void> {
  const client = await createClient({ RESP: 3, modules: { recipes } }).connect();
  const length: number = await client.recipes.rvLen('viewed');
  const added: Count = await client.recipes.topnIncr('searches', 'redis', { by: 3n });
  const batch: Count[] = await client.recipes.topnIncrBy('searches', [['redis', 2], ['valkey', 1n]], { at: 1 });
  const byObject: Count[] = await client.recipes.topnIncrBy('searches', { redis: 2 });
  // @ts-expect-error an increment is a number
  await client.recipes.topnIncrBy('searches', { redis: 'two' });
  const top: Array<{ member: string; count: Count }> = await client.recipes.topnTopWithCounts('searches', { n: 3 });
  await client.recipes.topnCreate('dash', { window: 24, views: [6, 12] });
  // @ts-expect-error VIEWS are numbers of buckets
  await client.recipes.topnCreate('dash', { views: '6 12' });
  const info: TopnInfo = await client.recipes.topnInfo('dash');
  const views: number[] = info.views;
  const viewMemory: number | undefined = info.viewMemory[6];
  const bound: Count | undefined = info.bound;
  // @ts-expect-error exact is a boolean, absent on a key without CAPACITY
  const exactNumber: number = info.exact;
  const rows: Row[] = await client.recipes.hcounterData('views', { day: '2024-01-02' });
  const page: Page<Row> = await client.recipes.ulistDataPage('users', '0', { count: 10 });
  const isNew: boolean = await client.recipes.ulistAdd('users', { user: 7 }, { expire: 60 });
  // @ts-expect-error a length is a number
  const wrong: string = await client.recipes.tlLen('timeline');
  // @ts-expect-error TOPN.INCR has no option `byy`
  await client.recipes.topnIncr('searches', 'redis', { byy: 2 });
  // @ts-expect-error ULIST.CREATE needs its VALUE names
  await client.recipes.ulistCreate('users', {});
  const exact = client.withTypeMapping({ [RESP_TYPES.NUMBER]: String });
  const big: Count = await exact.recipes.hcounterIncrBy('views', 2n ** 60n, { day: 'd' });
  const queued = await client.multi().recipes.topnIncr('t', 'm').recipes.rvGet('v').exec();
  const cluster = createCluster({ rootNodes: [], modules: { recipes } });
  const has: boolean = await cluster.recipes.ulistHas('users', { user: 7 });
  // one module per family, as @redis/bloom has them
  const modular = await createClient({ modules: recipesModules }).connect();
  const incremented: Count = await modular.topn.incr('searches', 'redis');
  const members: string[] = await modular.topn.top('searches', { n: 3 });
  const rowsToo: Row[] = await modular.ulist.data('users');
  const buffers = modular.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  const exactMembers: Buffer[] = await buffers.topn.top('searches');
  const exactTop: Array<{ member: Buffer; count: Count }> = await buffers.recipes.topnTopWithCounts('searches');
  // @ts-expect-error mapped to Buffers, not strings
  const mapped: string[] = await buffers.rv.get('viewed');
  const inMulti = await modular.multi().topn.incr('t', 'm').rv.add('v', 'x').exec();
  void [incremented, members, rowsToo, exactMembers, exactTop, mapped, inMulti];
  void [length, added, batch, byObject, top, info, views, viewMemory, bound, exactNumber, rows, page, isNew, wrong, big, queued, has];
}

export async function ioredis(): Promise<void> {
  const redis = addRecipes(new Redis());
  const counts: Count[] = await redis.recipes.topnCount('searches', ['redis', 'valkey']);
  const items: string[] = await redis.recipes.tlRange('timeline', { count: 10 });
  // @ts-expect-error RV.GET's options are an object
  await redis.recipes.rvGet('viewed', 10);
  const piped: Array<[Error | null, unknown]> | null = await redis.recipes.pipeline().rvAdd('v', 'x').rvLen('v').exec();
  // ioredis' own pipeline takes the families beside its own commands
  const mixed = redis.pipeline();
  mixed.set('plain', 'x');
  const chained = mixed.topn.incr('searches', 'redis').ulist.add('users', { user: 7 }).get('plain');
  const pairs: Array<[Error | null, unknown]> | null = await redis.multi().hcounter.incrBy('c', 2, { day: 'd' }).exec();
  const bytes: Buffer[] = await redis.topn.topBuffer('searches');
  const strings: string[] = await redis.topn.top('searches');
  // @ts-expect-error the *Buffer twin gives Buffers
  const notStrings: string[] = await redis.tl.rangeBuffer('timeline');
  for await (const row of redis.recipes.ulistIterData('users', { count: 100 })) void (row satisfies Row);
  for await (const row of redis.hcounter.iterDataBuffer('views')) void (row satisfies Row<Buffer>);
  void [chained, pairs, bytes, strings, notStrings];
  const rec = new Recipes(new Cluster([]));
  rec.declare('hcounter', 'views', { partition: 'day', group: 'city' });
  for await (const row of rec.pages('hcounterDataPage', 'views', { count: 100 })) void (row satisfies Row);
  const hot = new ShardedTopN(new Cluster([]), 'lookups', 3);
  const best: Array<{ member: string; count: Count }> = await hot.top({ n: 10 });
  void [counts, items, piped, best];
}
