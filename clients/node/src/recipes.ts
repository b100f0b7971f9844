// `Recipes`: the typed commands over any client (ioredis `Redis` or
// `Cluster`, node-redis client or cluster), flat (`rec.topnIncr`) and one
// namespace per family (`rec.topn.incr`), each with a `*Buffer` twin whose
// members, items and values are Buffers (every byte as stored), as ioredis'
// `getBuffer` is to `get`. What a command definition cannot do is here,
// once: a key declared through `ulistCreate` / `hcounterCreate` is created
// again when a write finds it gone (deleted, evicted, flushed), and the
// write is tried once more; paged reads (`ulist.iterData`, ...) follow the
// cursor to its end. On ioredis, pipelines and MULTI take the same commands
// beside ioredis' own and `exec()` answers ioredis' `[error, result]` pairs.

import {
  COMMANDS,
  CREATES,
  FAMILIES,
  Arg,
  Family,
  Methods,
  Name,
  NameOf,
  Names,
  Params,
  Result,
  familyOf,
  isLostKey,
  wire,
} from './commands';
import type { Page, Row } from './replies';

/** Sends one command of the table about `key`; its parsed reply (Buffers
 * for members, items and values when `buffers`). */
type Send = (name: Name, key: Arg, params: unknown[], buffers: boolean) => Promise<unknown>;

type KeyPrefix = string | Buffer | undefined;

function isIORedis(client: any): boolean {
  return typeof client.pipeline === 'function' && 'status' in client;
}

/** An ioredis Command for a command of the table, whose reply (in a
 * pipeline and a MULTI too) is parsed. ioredis knows no module command's
 * keys: the client's keyPrefix goes on the key, and the key is named, so a
 * Cluster sends the command to its node at once. */
function ioredisCommand(name: Name, key: Arg, params: unknown[], buffers: boolean, prefix: KeyPrefix): any {
  const { Command } = require('ioredis');
  const spec = COMMANDS[name];
  const [bare, ...rest] = wire([key, ...(spec.args as (...p: unknown[]) => Arg[])(...params)]);
  const prefixed =
    prefix === undefined || prefix === ''
      ? bare
      : typeof prefix === 'string' && typeof bare === 'string'
        ? prefix + bare
        : Buffer.concat([Buffer.from(prefix), Buffer.from(bare)]);
  const cmd = new Command(spec.command, [prefixed, ...rest], {
    replyEncoding: buffers ? null : 'utf8',
    readOnly: spec.readOnly,
  });
  cmd.keys = [prefixed];
  const decode = cmd.transformReply.bind(cmd);
  cmd.transformReply = (raw: unknown) => spec.reply(decode(raw));
  return cmd;
}

function senderOf(client: any): Send {
  if (isIORedis(client)) {
    return (name, key, params, buffers) => {
      const cmd = ioredisCommand(name, key, params, buffers, client.options.keyPrefix);
      client.sendCommand(cmd);
      return cmd.promise;
    };
  }
  const argv = (name: Name, key: Arg, params: unknown[]) => [
    COMMANDS[name].command,
    ...wire([key, ...(COMMANDS[name].args as (...p: unknown[]) => Arg[])(...params)]),
  ];
  // node-redis: the client's own type mapping, with Buffers for blob strings when asked
  const options = (buffers: boolean) => {
    if (!buffers) return undefined;
    const { RESP_TYPES } = require('@redis/client');
    return { typeMapping: { ...client._commandOptions?.typeMapping, [RESP_TYPES.BLOB_STRING]: Buffer } };
  };
  if ('masters' in client) {
    // node-redis cluster: sendCommand(firstKey, isReadonly, args, options)
    return async (name, key, params, buffers) =>
      COMMANDS[name].reply(
        await client.sendCommand(wire([key])[0], COMMANDS[name].readOnly, argv(name, key, params), options(buffers)),
      );
  }
  return async (name, key, params, buffers) =>
    COMMANDS[name].reply(await client.sendCommand(argv(name, key, params), options(buffers)));
}

type Call<N extends Name, S> = (key: Arg, ...params: Params<N>) => Promise<Result<N, S>>;

/** Every command flat, and its `*Buffer` twin. */
export type FlatCommands = { [N in Name]: Call<N, string> } & { [N in Name as `${N}Buffer`]: Call<N, Buffer> };

export interface PageOptions {
  /** Rows a page (the server's COUNT). */
  count?: number;
  /** Names and values that select the partitions (or scopes) read. */
  where?: Names;
}

/** The paged reads of ULIST and HCOUNTER: every row once, a page at a time. */
export interface Paging {
  iterData(key: Arg, options?: PageOptions): AsyncGenerator<Row<string>>;
  iterDataBuffer(key: Arg, options?: PageOptions): AsyncGenerator<Row<Buffer>>;
  iterPartitions(key: Arg, options?: PageOptions): AsyncGenerator<Row<string>>;
  iterPartitionsBuffer(key: Arg, options?: PageOptions): AsyncGenerator<Row<Buffer>>;
}

/** A family's namespace: its commands as methods (`topn.incrBy`), with
 * their `*Buffer` twins, and ULIST's and HCOUNTER's paged reads. */
export type FamilyCommands<F extends Family> = { [M in Methods<F>]: Call<NameOf<F, M>, string> } & {
  [M in Methods<F> as `${M}Buffer`]: Call<NameOf<F, M>, Buffer>;
} & (F extends 'ulist' | 'hcounter' ? Paging : unknown);

/** The paged reads flat on Recipes: `ulistIterData`, `hcounterIterPartitionsBuffer`, ... */
export type FlatPaging = {
  [K in `${'ulist' | 'hcounter'}${Capitalize<keyof Paging>}`]: K extends `${string}Buffer`
    ? (key: Arg, options?: PageOptions) => AsyncGenerator<Row<Buffer>>
    : (key: Arg, options?: PageOptions) => AsyncGenerator<Row<string>>;
};

type PagedName = 'ulistDataPage' | 'ulistPartitionsPage' | 'hcounterDataPage' | 'hcounterPartitionsPage';

const PAGED: Record<string, PagedName> = {
  ulistIterData: 'ulistDataPage',
  ulistIterPartitions: 'ulistPartitionsPage',
  hcounterIterData: 'hcounterDataPage',
  hcounterIterPartitions: 'hcounterPartitionsPage',
};

export interface Recipes extends FlatCommands, FlatPaging {}

export class Recipes {
  readonly client: any;
  readonly rv!: FamilyCommands<'rv'>;
  readonly tl!: FamilyCommands<'tl'>;
  readonly topn!: FamilyCommands<'topn'>;
  readonly ulist!: FamilyCommands<'ulist'>;
  readonly hcounter!: FamilyCommands<'hcounter'>;
  private readonly send: Send;
  /** The CREATE arguments of each key this client declared. */
  private readonly declared = new Map<string, { name: Name; params: unknown[] }>();

  constructor(client: any) {
    this.client = client;
    this.send = senderOf(client);
    const self = this as any;
    for (const family of FAMILIES) self[family] = {};
    for (const name of Object.keys(COMMANDS) as Name[]) {
      const [family, method] = familyOf(name);
      self[name] = self[family][method] = (key: Arg, ...params: unknown[]) => this.call(name, key, params, false);
      self[`${name}Buffer`] = self[family][`${method}Buffer`] = (key: Arg, ...params: unknown[]) =>
        this.call(name, key, params, true);
    }
    for (const [flat, page] of Object.entries(PAGED)) {
      const [family, method] = familyOf(flat as Name);
      self[flat] = self[family][method] = (key: Arg, options?: PageOptions) => this.rows(page, key, options, false);
      self[`${flat}Buffer`] = self[family][`${method}Buffer`] = (key: Arg, options?: PageOptions) =>
        this.rows(page, key, options, true);
    }
  }

  private async call(name: Name, key: Arg, params: unknown[], buffers: boolean): Promise<unknown> {
    const send = () => this.send(name, key, params, buffers);
    if (name === 'ulistCreate' || name === 'hcounterCreate') {
      const done = await send();
      this.declared.set(`${name}\0${String(key)}`, { name, params });
      return done;
    }
    const create = CREATES[name];
    const declaration = create && this.declared.get(`${create}\0${String(key)}`);
    try {
      return await send();
    } catch (error) {
      if (!declaration || !isLostKey(error)) throw error;
      await this.call(declaration.name, key, declaration.params, false);
      return send();
    }
  }

  /** Every row of a paged read, following the cursor a page at a time. */
  private async *rows(name: PagedName, key: Arg, options: PageOptions = {}, buffers: boolean): AsyncGenerator<any> {
    let cursor = '0';
    do {
      const page = (await this.call(name, key, [cursor, options], buffers)) as Page<unknown>;
      yield* page.rows;
      cursor = page.cursor;
    } while (cursor !== '0');
  }

  /** A key created elsewhere: writes through this client re-create it from
   * `declaration` when it is lost (nothing is sent now). */
  declare(kind: 'ulist' | 'hcounter', key: Arg, declaration: Params<'ulistCreate'>[0] | Params<'hcounterCreate'>[0]): void {
    const name: Name = kind === 'ulist' ? 'ulistCreate' : 'hcounterCreate';
    this.declared.set(`${name}\0${String(key)}`, { name, params: [declaration] });
  }

  /** Every row of a paged read named by its page command (the namespaces'
   * `iterData` / `iterPartitions` say the same without a name). */
  pages<N extends PagedName>(name: N, key: Arg, options: PageOptions = {}): AsyncGenerator<Result<N>['rows'][number]> {
    return this.rows(name, key, options, false);
  }

  /** An ioredis pipeline (or MULTI, with `transaction: true`) that takes
   * these commands beside ioredis' own; `exec()` answers ioredis'
   * `[error, result]` pairs, each result parsed. */
  pipeline(transaction = false): RecipesPipeline {
    return withRecipes(transaction ? this.client.multi() : this.client.pipeline(), this.client.options.keyPrefix);
  }
}

type Queue<N extends Name, P> = (key: Arg, ...params: Params<N>) => P;

/** The commands of the table on an ioredis pipeline `P`, each returning
 * the pipeline: flat (`topnIncr`, as the pipelines of earlier releases
 * had them) and one namespace per family (`topn.incr`). */
export type RecipesChain<P> = { [N in Name]: Queue<N, RecipesPipeline<P>> } & {
  [N in Name as `${N}Buffer`]: Queue<N, RecipesPipeline<P>>;
} & {
  [F in Family]: { [M in Methods<F>]: Queue<NameOf<F, M>, RecipesPipeline<P>> } & {
    [M in Methods<F> as `${M}Buffer`]: Queue<NameOf<F, M>, RecipesPipeline<P>>;
  };
};

/** What this package knows of an ioredis pipeline without ioredis' types. */
export interface PipelineLike {
  exec(): Promise<Array<[error: Error | null, result: unknown]> | null>;
}

export type RecipesPipeline<P = PipelineLike> = P & RecipesChain<P>;

/** `pipeline` with the commands of the table queued on it. */
function withRecipes<P>(pipeline: P, prefix: KeyPrefix): RecipesPipeline<P> {
  const queue = pipeline as any;
  for (const family of FAMILIES) queue[family] = {};
  for (const name of Object.keys(COMMANDS) as Name[]) {
    const [family, method] = familyOf(name);
    for (const buffers of [false, true]) {
      const suffix = buffers ? 'Buffer' : '';
      queue[`${name}${suffix}`] = queue[family][`${method}${suffix}`] = (key: Arg, ...params: unknown[]) => {
        queue.sendCommand(ioredisCommand(name, key, params, buffers, prefix));
        return queue;
      };
    }
  }
  return queue;
}

type Pipelined<T> = T extends { pipeline(...args: any[]): infer P }
  ? { pipeline(...args: any[]): RecipesPipeline<P>; multi(...args: any[]): RecipesPipeline<P> }
  : unknown;

/** The namespaces of the families on every client. */
export type WithRecipes<T> = Omit<T, 'pipeline' | 'multi' | 'recipes' | Family> & {
  recipes: Recipes;
} & { [F in Family]: FamilyCommands<F> } & Pipelined<T>;

/** The typed commands on `client` itself, as node-redis modules have them:
 * `client.recipes` (flat, as a `Recipes`) and `client.topn`, `client.ulist`,
 * ... (`addRecipes(new Redis()).topn.incr('k', 'm')`); on ioredis, its
 * `pipeline()` and `multi()` take them too, beside its own commands. */
export function addRecipes<T extends object>(client: T): WithRecipes<T> {
  const rec = new Recipes(client);
  const target = client as any;
  const own = (name: string, value: unknown) =>
    Object.defineProperty(target, name, { value, configurable: true, writable: true, enumerable: false });
  own('recipes', rec);
  for (const family of FAMILIES) own(family, (rec as any)[family]);
  if (isIORedis(client)) {
    const pipeline = target.pipeline.bind(target);
    const multi = target.multi.bind(target);
    own('pipeline', (...args: unknown[]) => withRecipes(pipeline(...args), target.options.keyPrefix));
    own('multi', (...args: unknown[]) => {
      const queued = multi(...args);
      // multi({ pipeline: false }) starts a MULTI and answers a promise
      return typeof queued?.exec === 'function' ? withRecipes(queued, target.options.keyPrefix) : queued;
    });
  }
  return target;
}
