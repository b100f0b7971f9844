// ShardedTopN: an exact top-N spread over K TOPN keys by a hash of the
// member (CRC-32 of its bytes, modulo K), as the Python package has it, so a
// top-N too hot for one node spreads over a cluster's nodes.
//
// - incr is one command on one key.
// - top(n) asks every shard for its n highest WITHCOUNTS at one AT and
//   merges them by (count descending, member ascending), TOPN's own order.
//   That is exact: a member's count is whole in its shard, and a member of
//   the global top n has at most n-1 members above it in its shard (each of
//   them above it globally too), so it is in its shard's top n.
//
// Keys are `name:{tag}`, one hash tag per shard, chosen so that shard i of K
// sits in the middle of the i-th of K equal ranges of the 16384 slots: with
// K the number of masters of a `redis-cli --cluster create` cluster, each
// shard is on its own node. The same tags as the Python package, so both
// clients share one top-N.

import * as zlib from 'node:zlib';
import generateSlot = require('cluster-key-slot');
import type { Arg } from './commands';
import type { Bytes, Count } from './replies';
import { Recipes } from './recipes';

const SLOTS = 16384;
export const MAX_SHARDS = 256;

/** CRC-32 (IEEE) of the bytes: zlib's, the hash that picks a member's shard. */
export function crc32(bytes: Uint8Array): number {
  return zlib.crc32(bytes);
}

/** The cluster slot of a key (with its hash tag, as Redis finds it). */
export function keySlot(key: string | Buffer): number {
  return generateSlot(key);
}

/** The hash tag of each of `shards` shards: `i`, else the first `i.j`
 * whose slot is within an eighth of a range of the i-th range's middle. */
export function shardTags(shards: number): string[] {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new RangeError(`shards must be 1..${MAX_SHARDS}, got ${shards}`);
  }
  const width = SLOTS / shards;
  return Array.from({ length: shards }, (_, i) => {
    const middle = (i + 0.5) * width;
    for (let j = 0; ; j++) {
      const tag = j === 0 ? String(i) : `${i}.${j}`;
      if (Math.abs(keySlot(`{${tag}}`) - middle) <= width / 8) return tag;
    }
  });
}

function memberBytes(member: Arg): Buffer {
  return Buffer.isBuffer(member) ? member : Buffer.from(String(member));
}

/** TOPN's order: count descending (a bigint past 2^53 too), then member
 * bytes ascending. */
function ranked(a: { member: Bytes; count: Count }, b: { member: Bytes; count: Count }): number {
  if (a.count !== b.count) return a.count > b.count ? -1 : 1;
  return Buffer.compare(Buffer.from(a.member), Buffer.from(b.member));
}

export interface TopOptions {
  n?: number;
  at?: number;
  last?: number;
}

export class ShardedTopN {
  readonly recipes: Recipes;
  readonly keys: string[];

  /** `client`: any client `Recipes` takes (a cluster client for a cluster). */
  constructor(client: any, readonly name: string, shards: number) {
    this.recipes = client instanceof Recipes ? client : new Recipes(client);
    this.keys = shardTags(shards).map((tag) => `${name}:{${tag}}`);
  }

  /** The key holding `member`. */
  keyOf(member: Arg): string {
    return this.keys[crc32(memberBytes(member)) % this.keys.length];
  }

  /** TOPN.CREATE on every shard, with the same shape (views keep `last: k`
   * reads as cheap on every shard as whole-window ones). */
  async create(options: { bucket?: number; window?: number; align?: number; views?: number[] } = {}): Promise<void> {
    await Promise.all(this.keys.map((key) => this.recipes.topnCreate(key, options)));
  }

  /** TOPN.INCR on the member's shard: its count over the window. */
  incr(member: Arg, options: { by?: number | bigint; at?: number } = {}): Promise<Count> {
    return this.recipes.topnIncr(this.keyOf(member), member, options);
  }

  /** The exact n highest over all shards at `at` (default: this client's
   * clock, the same for every shard). */
  top(options: TopOptions = {}): Promise<Array<{ member: string; count: Count }>> {
    return this.merged(options, (key, o) => this.recipes.topnTopWithCounts(key, o));
  }

  /** `top` with each member as a Buffer, every byte as stored. */
  topBuffer(options: TopOptions = {}): Promise<Array<{ member: Buffer; count: Count }>> {
    return this.merged(options, (key, o) => this.recipes.topnTopWithCountsBuffer(key, o));
  }

  private async merged<S extends Bytes>(
    options: TopOptions,
    read: (key: string, o: { n: number; at: number; last?: number }) => Promise<Array<{ member: S; count: Count }>>,
  ): Promise<Array<{ member: S; count: Count }>> {
    const n = options.n ?? 10;
    const at = options.at ?? Date.now();
    const replies = await Promise.all(this.keys.map((key) => read(key, { n, at, last: options.last })));
    return replies.flat().sort(ranked).slice(0, n);
  }

  /** TOPN.COUNT on each member's shard: counts in the order asked. */
  async count(members: Arg[], options: { at?: number; last?: number } = {}): Promise<Count[]> {
    const at = options.at ?? Date.now();
    const byShard = new Map<string, number[]>();
    members.forEach((m, i) => {
      const key = this.keyOf(m);
      byShard.set(key, [...(byShard.get(key) ?? []), i]);
    });
    const out = new Array<Count>(members.length).fill(0);
    await Promise.all(
      [...byShard].map(async ([key, positions]) => {
        const counts = await this.recipes.topnCount(key, positions.map((i) => members[i]), { at, last: options.last });
        positions.forEach((p, j) => (out[p] = counts[j]));
      }),
    );
    return out;
  }
}
