// Every public command of the five families, once: its name, whether it
// only reads, the arguments after the key, and the parser of its reply, and
// the type of each reply (`Replies`). `node-redis.ts` and `recipes.ts`
// (ioredis, and any client) are built from this table, so both send the same
// arguments and return the same values.

import * as reply from './replies';
import type { Bytes, Count, Page, Row, TopnInfo } from './replies';

export type Arg = string | number | bigint | Buffer;
/** Names and values of a key's declaration (`{ company_id: 1, month: '2024-01' }`),
 * or `[name, value]` pairs, where a name may be a Buffer (any bytes). */
export type Names = Record<string, Arg> | Array<[string | Buffer, Arg]>;
/** Declared names: one, or a list; a Buffer for a name of any bytes. */
export type NameList = string | Buffer | Array<string | Buffer>;

export interface Spec<P extends unknown[], R> {
  command: string;
  readOnly: boolean;
  args: (...params: P) => Arg[];
  reply: (raw: unknown) => R;
}

function spec<P extends unknown[], R>(s: Spec<P, R>): Spec<P, R> {
  return s;
}

/** `name value` when the value is given. */
function opt(name: string, value: Arg | undefined): Arg[] {
  return value === undefined ? [] : [name, value];
}

function flag(name: string, on: boolean | undefined): Arg[] {
  return on ? [name] : [];
}

function flat(names: Names | undefined): Arg[] {
  const entries = Array.isArray(names) ? names : Object.entries(names ?? {});
  return entries.flatMap(([name, value]) => [name, value]);
}

function words(word: string, names: NameList | undefined): Arg[] {
  const list = names === undefined ? [] : Array.isArray(names) ? names : [names];
  return list.length ? [word, ...list] : [];
}

function cursor(c: string | undefined, count: number | undefined): Arg[] {
  return ['CURSOR', c ?? '0', ...opt('COUNT', count)];
}

export interface Expiry {
  /** Seconds, or */
  ttl?: number;
  /** an absolute time in Unix ms. */
  pxat?: number;
}

function expiry(e: Expiry): Arg[] {
  return [...opt('TTL', e.ttl), ...opt('PXAT', e.pxat)];
}

/** TOPN.INCRBY's events: `{ member: increment }` or `[member, increment]` pairs. */
export type Increments = Record<string, number | bigint> | Array<[Arg, number | bigint]>;

export interface TopnDeclaration {
  /** Bucket width, seconds. */
  bucket?: number;
  /** Buckets in the window. */
  window?: number;
  /** Bucket boundaries this many seconds after the epoch's. */
  align?: number;
  /** At most this many counters a bucket: counts come with errors. */
  capacity?: number;
  /** `last` values whose totals the key keeps running (`[6, 12]`). */
  views?: number[];
}

export interface Read {
  /** Unix ms (default: the server's clock). */
  at?: number;
  /** The newest `last` buckets of the window. */
  last?: number;
}

export interface Top extends Read {
  /** How many (default 10). */
  n?: number;
}

function top(o: Top, withCounts: boolean, withErrors = false): Arg[] {
  return [
    o.n ?? 10,
    ...opt('AT', o.at),
    ...opt('LAST', o.last),
    ...flag('WITHCOUNTS', withCounts),
    ...flag('WITHERRORS', withErrors),
  ];
}

export interface ULDeclaration {
  value: NameList;
  scope?: NameList;
  partition?: NameList;
  /** Default lifetime of a value, seconds. */
  expire?: number;
}

export interface HCDeclaration {
  partition?: NameList;
  group?: NameList;
  ttl?: number;
  float?: boolean;
  unique?: NameList;
  scope?: NameList;
}

export const COMMANDS = {
  rvAdd: spec({
    command: 'RV.ADD',
    readOnly: false,
    args: (member: Arg, o: { at?: number; maxlen?: number } & Expiry = {}) => [
      member,
      ...opt('AT', o.at),
      ...opt('MAXLEN', o.maxlen),
      ...expiry(o),
    ],
    reply: reply.integer,
  }),
  rvGet: spec({
    command: 'RV.GET',
    readOnly: true,
    args: (o: { limit?: number; since?: number } = {}) => [...opt('LIMIT', o.limit), ...opt('SINCE', o.since)],
    reply: reply.bytes,
  }),
  rvGetWithTimes: spec({
    command: 'RV.GET',
    readOnly: true,
    args: (o: { limit?: number; since?: number } = {}) => [
      ...opt('LIMIT', o.limit),
      ...opt('SINCE', o.since),
      'WITHSCORES',
    ],
    reply: reply.withTimes,
  }),
  rvRem: spec({ command: 'RV.REM', readOnly: false, args: (...members: Arg[]) => members, reply: reply.integer }),
  rvLen: spec({ command: 'RV.LEN', readOnly: true, args: () => [], reply: reply.integer }),

  tlPush: spec({
    command: 'TL.PUSH',
    readOnly: false,
    args: (item: Arg, o: { maxlen?: number; slack?: number } & Expiry = {}) => [
      item,
      ...opt('MAXLEN', o.maxlen),
      ...opt('SLACK', o.slack),
      ...expiry(o),
    ],
    reply: reply.integer,
  }),
  tlRange: spec({
    command: 'TL.RANGE',
    readOnly: true,
    args: (o: { offset?: number; count?: number } = {}) => [...opt('OFFSET', o.offset), ...opt('COUNT', o.count)],
    reply: reply.bytes,
  }),
  tlRem: spec({
    command: 'TL.REM',
    readOnly: false,
    args: (item: Arg, o: { count?: number } = {}) => [item, ...opt('COUNT', o.count)],
    reply: reply.integer,
  }),
  tlLen: spec({ command: 'TL.LEN', readOnly: true, args: () => [], reply: reply.integer }),

  topnCreate: spec({
    command: 'TOPN.CREATE',
    readOnly: false,
    args: (o: TopnDeclaration = {}) => [
      ...opt('BUCKET', o.bucket),
      ...opt('WINDOW', o.window),
      ...opt('ALIGN', o.align),
      ...opt('CAPACITY', o.capacity),
      ...(o.views?.length ? ['VIEWS', ...o.views] : []),
    ],
    reply: reply.ok,
  }),
  topnIncr: spec({
    command: 'TOPN.INCR',
    readOnly: false,
    args: (member: Arg, o: { by?: number | bigint; at?: number } = {}) => [member, ...opt('BY', o.by), ...opt('AT', o.at)],
    reply: reply.count,
  }),
  /** TOPN.INCRBY: many events at one time, all or nothing; `{ member: n }`
   * or `[member, n]` pairs (a member may come twice). Each member's count
   * after the call, in the order given. */
  topnIncrBy: spec({
    command: 'TOPN.INCRBY',
    readOnly: false,
    args: (increments: Increments, o: { at?: number } = {}) => [
      ...opt('AT', o.at),
      ...(Array.isArray(increments) ? increments : Object.entries(increments)).flatMap(([member, by]) => [
        by,
        member,
      ]),
    ],
    reply: reply.counts,
  }),
  topnTop: spec({ command: 'TOPN.TOP', readOnly: true, args: (o: Top = {}) => top(o, false), reply: reply.bytes }),
  topnTopWithCounts: spec({
    command: 'TOPN.TOP',
    readOnly: true,
    args: (o: Top = {}) => top(o, true),
    reply: reply.withCounts,
  }),
  topnTopWithErrors: spec({
    command: 'TOPN.TOP',
    readOnly: true,
    args: (o: Top = {}) => top(o, false, true),
    reply: reply.withErrors,
  }),
  topnTop24: spec({
    command: 'TOPN.TOP24',
    readOnly: true,
    args: (o: Omit<Top, 'last'> = {}) => top(o, false),
    reply: reply.bytes,
  }),
  topnTop24WithCounts: spec({
    command: 'TOPN.TOP24',
    readOnly: true,
    args: (o: Omit<Top, 'last'> = {}) => top(o, true),
    reply: reply.withCounts,
  }),
  topnTop24WithErrors: spec({
    command: 'TOPN.TOP24',
    readOnly: true,
    args: (o: Omit<Top, 'last'> = {}) => top(o, false, true),
    reply: reply.withErrors,
  }),
  topnCount: spec({
    command: 'TOPN.COUNT',
    readOnly: true,
    args: (members: Arg[], o: Read = {}) => [...members, ...opt('AT', o.at), ...opt('LAST', o.last)],
    reply: reply.counts,
  }),
  topnCountWithErrors: spec({
    command: 'TOPN.COUNT',
    readOnly: true,
    args: (members: Arg[], o: Read = {}) => [
      ...members,
      ...opt('AT', o.at),
      ...opt('LAST', o.last),
      'WITHERRORS',
    ],
    reply: reply.countsWithErrors,
  }),
  topnInfo: spec({ command: 'TOPN.INFO', readOnly: true, args: () => [], reply: reply.topnInfo }),

  ulistCreate: spec({
    command: 'ULIST.CREATE',
    readOnly: false,
    args: (d: ULDeclaration) => [
      ...words('VALUE', d.value),
      ...words('SCOPE', d.scope),
      ...words('PARTITION', d.partition),
      ...opt('EXPIRE', d.expire),
    ],
    reply: reply.ok,
  }),
  ulistAdd: spec({
    command: 'ULIST.ADD',
    readOnly: false,
    args: (names: Names, o: { expire?: number; never?: boolean; pxat?: number; refresh?: boolean; at?: number } = {}) => [
      ...opt('EXPIRE', o.expire),
      ...flag('NEVER', o.never),
      ...opt('PXAT', o.pxat),
      ...flag('REFRESH', o.refresh),
      ...opt('AT', o.at),
      ...flat(names),
    ],
    reply: reply.boolean,
  }),
  ulistHas: spec({ command: 'ULIST.HAS', readOnly: true, args: (names: Names) => flat(names), reply: reply.boolean }),
  ulistData: spec({ command: 'ULIST.DATA', readOnly: true, args: (where?: Names) => flat(where), reply: reply.rows }),
  ulistDataPage: spec({
    command: 'ULIST.DATA',
    readOnly: true,
    args: (c?: string, o: { count?: number; where?: Names } = {}) => [...flat(o.where), ...cursor(c, o.count)],
    reply: reply.page,
  }),
  ulistCount: spec({ command: 'ULIST.COUNT', readOnly: true, args: (where?: Names) => flat(where), reply: reply.integer }),
  ulistInfo: spec({ command: 'ULIST.INFO', readOnly: true, args: () => [], reply: reply.info }),
  ulistPartitions: spec({
    command: 'ULIST.PARTITIONS',
    readOnly: true,
    args: (where?: Names) => flat(where),
    reply: reply.rows,
  }),
  ulistPartitionsPage: spec({
    command: 'ULIST.PARTITIONS',
    readOnly: true,
    args: (c?: string, o: { count?: number; where?: Names } = {}) => [...flat(o.where), ...cursor(c, o.count)],
    reply: reply.page,
  }),
  ulistDel: spec({ command: 'ULIST.DEL', readOnly: false, args: (where?: Names) => flat(where), reply: reply.integer }),

  hcounterCreate: spec({
    command: 'HCOUNTER.CREATE',
    readOnly: false,
    args: (d: HCDeclaration = {}) => [
      ...words('PARTITION', d.partition),
      ...words('GROUP', d.group),
      ...opt('TTL', d.ttl),
      ...flag('FLOAT', d.float),
      ...words('UNIQUE', d.unique),
      ...words('SCOPE', d.scope),
    ],
    reply: reply.ok,
  }),
  hcounterIncr: spec({
    command: 'HCOUNTER.INCR',
    readOnly: false,
    args: (names: Names, o: { at?: number } = {}) => [...opt('AT', o.at), ...flat(names)],
    reply: reply.count,
  }),
  hcounterIncrBy: spec({
    command: 'HCOUNTER.INCRBY',
    readOnly: false,
    args: (by: number | bigint | string, names: Names, o: { at?: number } = {}) => [by, ...opt('AT', o.at), ...flat(names)],
    reply: reply.count,
  }),
  hcounterGet: spec({ command: 'HCOUNTER.GET', readOnly: true, args: (names?: Names) => flat(names), reply: reply.count }),
  hcounterData: spec({
    command: 'HCOUNTER.DATA',
    readOnly: true,
    args: (where?: Names) => flat(where),
    reply: reply.countedRows,
  }),
  hcounterDataPage: spec({
    command: 'HCOUNTER.DATA',
    readOnly: true,
    args: (c?: string, o: { count?: number; where?: Names } = {}) => [...flat(o.where), ...cursor(c, o.count)],
    reply: reply.countedPage,
  }),
  hcounterPartitions: spec({
    command: 'HCOUNTER.PARTITIONS',
    readOnly: true,
    args: (where?: Names) => flat(where),
    reply: reply.rows,
  }),
  hcounterPartitionsPage: spec({
    command: 'HCOUNTER.PARTITIONS',
    readOnly: true,
    args: (c?: string, o: { count?: number; where?: Names } = {}) => [...flat(o.where), ...cursor(c, o.count)],
    reply: reply.page,
  }),
  hcounterDel: spec({ command: 'HCOUNTER.DEL', readOnly: false, args: (where?: Names) => flat(where), reply: reply.integer }),
  hcounterInfo: spec({ command: 'HCOUNTER.INFO', readOnly: true, args: () => [], reply: reply.info }),
};

/** The arguments as sent: numbers in decimal, strings and Buffers as given. */
export function wire(args: Arg[]): Array<string | Buffer> {
  return args.map((a) => (typeof a === 'number' || typeof a === 'bigint' ? String(a) : a));
}

export type Commands = typeof COMMANDS;
export type Name = keyof Commands;
export type Params<N extends Name> = Parameters<Commands[N]['args']>;

type Info<S> = Record<string, number | S[]>;

/** Each command's reply, with `S` for its members, items and values (and
 * the names of an INFO declaration): `string` by default, `Buffer` from the
 * `*Buffer` methods, node-redis' BlobStringReply (mapped by its type
 * mapping) in the node-redis module. */
export interface Replies<S> {
  rvAdd: number;
  rvGet: S[];
  rvGetWithTimes: Array<{ member: S; time: number }>;
  rvRem: number;
  rvLen: number;
  tlPush: number;
  tlRange: S[];
  tlRem: number;
  tlLen: number;
  topnCreate: true;
  topnIncr: Count;
  topnIncrBy: Count[];
  topnTop: S[];
  topnTopWithCounts: Array<{ member: S; count: Count }>;
  topnTopWithErrors: Array<{ member: S; count: Count; error: Count }>;
  topnTop24: S[];
  topnTop24WithCounts: Array<{ member: S; count: Count }>;
  topnTop24WithErrors: Array<{ member: S; count: Count; error: Count }>;
  topnCount: Count[];
  topnCountWithErrors: Array<{ count: Count; error: Count }>;
  topnInfo: TopnInfo;
  ulistCreate: true;
  ulistAdd: boolean;
  ulistHas: boolean;
  ulistData: Array<Row<S>>;
  ulistDataPage: Page<Row<S>>;
  ulistCount: number;
  ulistInfo: Info<S>;
  ulistPartitions: Array<Row<S>>;
  ulistPartitionsPage: Page<Row<S>>;
  ulistDel: number;
  hcounterCreate: true;
  hcounterIncr: Count;
  hcounterIncrBy: Count;
  hcounterGet: Count;
  hcounterData: Array<Row<S>>;
  hcounterDataPage: Page<Row<S>>;
  hcounterPartitions: Array<Row<S>>;
  hcounterPartitionsPage: Page<Row<S>>;
  hcounterDel: number;
  hcounterInfo: Info<S>;
}

/** A command's reply: strings by default (`Result<N, Buffer>` from the
 * `*Buffer` methods). */
export type Result<N extends Name, S = string> = Replies<S>[N];

// Compile-time only: each parser gives its command's declared reply (with
// Bytes for S: what the client handed over).
type Assignable<T extends U, U> = T;
type CheckedParsers = Assignable<
  { [N in Name]: Commands[N]['reply'] },
  { [N in Name]: (raw: unknown) => Replies<Bytes>[N] }
>;

/** The five families, and the commands of each as a family's methods
 * (`topnIncrBy` is `topn.incrBy`). */
export const FAMILIES = ['rv', 'tl', 'topn', 'ulist', 'hcounter'] as const;
export type Family = (typeof FAMILIES)[number];
export type MethodOf<N extends Name, F extends Family> = N extends `${F}${infer M}` ? Uncapitalize<M> : never;
export type NameOf<F extends Family, M extends string> = Extract<Name, `${F}${Capitalize<M>}`>;
export type Methods<F extends Family> = MethodOf<Name, F>;

/** `[family, method]` of a command's name. */
export function familyOf(name: Name): [Family, string] {
  const family = FAMILIES.find((f) => name.startsWith(f) && /[A-Z]/.test(name[f.length]))!;
  const rest = name.slice(family.length);
  return [family, rest[0].toLowerCase() + rest.slice(1)];
}

export type { Bytes, Count, Page, Row, TopnInfo };

/** The CREATE that declares a key again, for the writes that recreate it. */
export const CREATES: Partial<Record<Name, Name>> = {
  ulistAdd: 'ulistCreate',
  hcounterIncr: 'hcounterCreate',
  hcounterIncrBy: 'hcounterCreate',
};

/** The server's answer to a write on a ULIST or HCOUNTER key that is gone. */
export function isLostKey(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /^(ERR )?no such (list|counter)/.test(message);
}
