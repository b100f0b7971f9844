// The commands as a node-redis v5 module:
//   createClient({ modules: { recipes } })  ->  client.recipes.topnIncr('k', 'm')
// in pipelines and MULTI too (`client.multi().recipes.topnIncr(...)`), on
// createCluster (routed by the key), under RESP2 and RESP3 alike.

import type { CommandParser } from '@redis/client';
import { COMMANDS, Arg, Name, Params, Result, wire } from './commands';

type RedisArgument = string | Buffer;

export interface NodeRedisCommand<N extends Name> {
  IS_READ_ONLY: boolean;
  parseCommand(this: void, parser: CommandParser, key: RedisArgument, ...params: Params<N>): void;
  transformReply: { 2: (raw: any) => Result<N>; 3: (raw: any) => Result<N> };
}

export type RecipesModule = { [N in Name]: NodeRedisCommand<N> };

function command<N extends Name>(name: N): NodeRedisCommand<N> {
  const spec = COMMANDS[name];
  const args = spec.args as (...p: Params<N>) => Arg[];
  const reply = spec.reply as (raw: unknown) => Result<N>;
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

export const recipes = Object.fromEntries(
  (Object.keys(COMMANDS) as Name[]).map((name) => [name, command(name)]),
) as RecipesModule;
