// The package's declarations (dist/*.d.ts) as a TypeScript user meets them:
// `npm test` type-checks this file first (never run). Each
// `@ts-expect-error` must stay an error, so a loosened type fails the check.
import { createClient, createCluster, RESP_TYPES } from 'redis';
import Redis, { Cluster } from 'ioredis';
import { recipes, addRecipes, Recipes, ShardedTopN, Count, Row, Page, TopnInfo } from '..';

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
  void [length, added, batch, byObject, top, info, views, viewMemory, bound, exactNumber, rows, page, isNew, wrong, big, queued, has];
}

export async function ioredis(): Promise<void> {
  const redis = addRecipes(new Redis());
  const counts: Count[] = await redis.recipes.topnCount('searches', ['redis', 'valkey']);
  const items: string[] = await redis.recipes.tlRange('timeline', { count: 10 });
  // @ts-expect-error RV.GET's options are an object
  await redis.recipes.rvGet('viewed', 10);
  const piped: unknown[] = await redis.recipes.pipeline().rvAdd('v', 'x').rvLen('v').exec();
  const rec = new Recipes(new Cluster([]));
  rec.declare('hcounter', 'views', { partition: 'day', group: 'city' });
  for await (const row of rec.pages('hcounterDataPage', 'views', { count: 100 })) void (row satisfies Row);
  const hot = new ShardedTopN(new Cluster([]), 'lookups', 3);
  const best: Array<{ member: string; count: Count }> = await hot.top({ n: 10 });
  void [counts, items, piped, best];
}
