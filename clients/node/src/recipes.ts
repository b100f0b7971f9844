// `Recipes`: the typed commands over any client (ioredis `Redis` or
// `Cluster`, node-redis client or cluster), with what a command definition
// cannot do: a key declared once through `ulistCreate` / `hcounterCreate`
// is created again when a write finds it gone (deleted, evicted, flushed),
// and the write is tried once more. `pipeline()` queues the same typed
// commands on an ioredis pipeline (node-redis has its module's `multi()`).

import { COMMANDS, CREATES, Arg, Name, Params, Result, isLostKey, wire } from './commands';

/** Sends one command (`args` after its name) about `key`. */
type Send = (command: string, key: Arg, args: Arg[], readOnly: boolean) => Promise<unknown>;

interface IORedisLike {
  sendCommand(command: unknown): unknown;
  pipeline(): unknown;
}

type KeyPrefix = string | Buffer | undefined;

function ioredisCommand(command: string, key: Arg, args: Arg[], readOnly: boolean, prefix: KeyPrefix): any {
  // ioredis knows no module command's keys: put the client's keyPrefix on
  // the key and name it, so a Cluster sends the command to its node at once.
  const { Command } = require('ioredis');
  const [bare, ...rest] = wire([key, ...args]);
  const prefixed =
    prefix === undefined || prefix === ''
      ? bare
      : typeof prefix === 'string' && typeof bare === 'string'
        ? prefix + bare
        : Buffer.concat([Buffer.from(prefix), Buffer.from(bare)]);
  const cmd = new Command(command, [prefixed, ...rest], { replyEncoding: 'utf8', readOnly });
  cmd.keys = [prefixed];
  return cmd;
}

function senderOf(client: any): Send {
  if (typeof client.pipeline === 'function' && 'status' in client) {
    return (command, key, args, readOnly) => {
      const cmd = ioredisCommand(command, key, args, readOnly, client.options.keyPrefix);
      (client as IORedisLike).sendCommand(cmd);
      return cmd.promise;
    };
  }
  const argv = (command: string, key: Arg, args: Arg[]) => [command, ...wire([key, ...args])];
  if ('masters' in client) {
    // node-redis cluster: sendCommand(firstKey, isReadonly, args)
    return (command, key, args, readOnly) => client.sendCommand(wire([key])[0], readOnly, argv(command, key, args));
  }
  return (command, key, args) => client.sendCommand(argv(command, key, args));
}

type Methods = { [N in Name]: (key: Arg, ...params: Params<N>) => Promise<Result<N>> };

export interface Recipes extends Methods {}

export class Recipes {
  readonly client: any;
  private readonly send: Send;
  /** The CREATE arguments of each key this client declared. */
  private readonly declared = new Map<string, { name: Name; params: unknown[] }>();

  constructor(client: any) {
    this.client = client;
    this.send = senderOf(client);
    for (const name of Object.keys(COMMANDS) as Name[]) {
      (this as any)[name] = (key: Arg, ...params: unknown[]) => this.call(name, key, params);
    }
  }

  private async call(name: Name, key: Arg, params: unknown[]): Promise<unknown> {
    const spec = COMMANDS[name];
    const send = () => this.send(spec.command, key, (spec.args as any)(...params), spec.readOnly);
    if (name === 'ulistCreate' || name === 'hcounterCreate') {
      const done = spec.reply(await send());
      this.declared.set(`${name}\0${String(key)}`, { name, params });
      return done;
    }
    const create = CREATES[name];
    const declaration = create && this.declared.get(`${create}\0${String(key)}`);
    try {
      return spec.reply(await send());
    } catch (error) {
      if (!declaration || !isLostKey(error)) throw error;
      await this.call(declaration.name, key, declaration.params);
      return spec.reply(await send());
    }
  }

  /** A key created elsewhere: writes through this client re-create it from
   * `declaration` when it is lost (nothing is sent now). */
  declare(kind: 'ulist' | 'hcounter', key: Arg, declaration: Params<'ulistCreate'>[0] | Params<'hcounterCreate'>[0]): void {
    const name: Name = kind === 'ulist' ? 'ulistCreate' : 'hcounterCreate';
    this.declared.set(`${name}\0${String(key)}`, { name, params: [declaration] });
  }

  /** Every row of a paged read (`ulistDataPage`, ...), a page at a time. */
  async *pages<N extends 'ulistDataPage' | 'ulistPartitionsPage' | 'hcounterDataPage' | 'hcounterPartitionsPage'>(
    name: N,
    key: Arg,
    options: { count?: number; where?: Record<string, Arg> } = {},
  ): AsyncGenerator<Result<N>['rows'][number]> {
    let cursor = '0';
    do {
      const page = (await this.call(name, key, [cursor, options])) as Result<N>;
      yield* page.rows as Array<Result<N>['rows'][number]>;
      cursor = page.cursor;
    } while (cursor !== '0');
  }

  /** The typed commands queued on an ioredis pipeline (or MULTI, with
   * `transaction: true`); `exec()` gives each reply parsed, or its Error. */
  pipeline(transaction = false): RecipesPipeline {
    const queue = transaction ? this.client.multi() : this.client.pipeline();
    return new RecipesPipeline(queue, this.client.options.keyPrefix);
  }
}

/** The typed commands on `client` itself, as `client.recipes` (as a
 * node-redis module has them): for an ioredis `Redis` or `Cluster`,
 * `addRecipes(new Redis()).recipes.topnIncr('k', 'm')`. */
export function addRecipes<T extends object>(client: T): T & { recipes: Recipes } {
  return Object.assign(client, { recipes: new Recipes(client) });
}

type Queued = { [N in Name]: (key: Arg, ...params: Params<N>) => RecipesPipeline };

export interface RecipesPipeline extends Queued {}

export class RecipesPipeline {
  private readonly parsers: Array<(raw: unknown) => unknown> = [];

  constructor(
    private readonly queue: any,
    keyPrefix: KeyPrefix,
  ) {
    for (const name of Object.keys(COMMANDS) as Name[]) {
      const spec = COMMANDS[name];
      (this as any)[name] = (key: Arg, ...params: unknown[]) => {
        const args = (spec.args as any)(...params);
        this.queue.sendCommand(ioredisCommand(spec.command, key, args, spec.readOnly, keyPrefix));
        this.parsers.push(spec.reply);
        return this;
      };
    }
  }

  async exec(): Promise<unknown[]> {
    const replies: Array<[Error | null, unknown]> = await this.queue.exec();
    return replies.map(([error, raw], i) => (error ? error : this.parsers[i](raw)));
  }
}
