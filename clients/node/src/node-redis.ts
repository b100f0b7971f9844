// The commands as node-redis v5 modules, one per family as @redis/bloom has
// them, and all of them flat as `recipes` (for existing code):
//   createClient({ modules: recipesModules })
//     ->  client.topn.incr('k', 'm'), client.recipes.topnIncr('k', 'm')
// in pipelines and MULTI too (`client.multi().topn.incr(...)`), on
// createCluster (routed by the key), under RESP2 and RESP3 alike. Members,
// items and values are BlobStringReply: strings by default, Buffers under
// `withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer })`, typed so.

import type { CommandParser } from '@redis/client';
import type { BlobStringReply } from '@redis/client/dist/lib/RESP/types';
import { COMMANDS, Arg, Family, Methods, Name, NameOf, Params, Result, familyOf, wire } from './commands';

type RedisArgument = string | Buffer;

export interface NodeRedisCommand<N extends Name> {
  IS_READ_ONLY: boolean;
  parseCommand(this: void, parser: CommandParser, key: RedisArgument, ...params: Params<N>): void;
  transformReply: { 2: (raw: any) => Result<N, BlobStringReply>; 3: (raw: any) => Result<N, BlobStringReply> };
}

export type RecipesModule = { [N in Name]: NodeRedisCommand<N> };
export type FamilyModule<F extends Family> = { [M in Methods<F>]: NodeRedisCommand<NameOf<F, M>> };

function command<N extends Name>(name: N): NodeRedisCommand<N> {
  const spec = COMMANDS[name];
  const args = spec.args as (...p: Params<N>) => Arg[];
  const reply = spec.reply as (raw: unknown) => Result<N, BlobStringReply>;
  return {
    IS_READ_ONLY: spec.readOnly,
    parseCommand(parser, key, ...params) {
      parser.push(spec.command);
      parser.pushKey(key);
      parser.push(...wire(args(...params)));
    },
    transformReply: { 2: reply, 3: reply },
  };
}

const NAMES = Object.keys(COMMANDS) as Name[];

/** Every command, flat: `client.recipes.topnIncr(...)`. */
export const recipes = Object.fromEntries(NAMES.map((name) => [name, command(name)])) as RecipesModule;

function familyModule<F extends Family>(family: F): FamilyModule<F> {
  const own = NAMES.filter((name) => familyOf(name)[0] === family);
  return Object.fromEntries(own.map((name) => [familyOf(name)[1], recipes[name]])) as FamilyModule<F>;
}

export const rv = familyModule('rv');
export const tl = familyModule('tl');
export const topn = familyModule('topn');
export const ulist = familyModule('ulist');
export const hcounter = familyModule('hcounter');

/** Every family's module and `recipes`: `createClient({ modules: recipesModules })`. */
export const recipesModules = { rv, tl, topn, ulist, hcounter, recipes };

