// Replies as plain JavaScript values, the same under RESP2 (flat arrays) and
// RESP3 (maps), from node-redis and from ioredis. Members, items, values and
// declared names stay as the client handed them over: strings by default,
// Buffers (every byte as stored) when node-redis' type mapping or an ioredis
// `*Buffer` method asks for them. `S` is that type in the signatures.

/** A count: a number, or a bigint past 2^53 when the client hands numbers
 * over as strings (node-redis `typeMapping`, ioredis `stringNumbers`). */
export type Count = number | bigint;

/** A member, item or value as the client hands it over: a string, or a
 * Buffer when asked for. */
export type Bytes = string | Buffer;

/** A DATA or PARTITIONS row: each name of the key's declaration (a string,
 * as JavaScript object keys are) and its value; an HCOUNTER.DATA row's
 * `value` is a count. */
export type Row<S = string> = Record<string, S | Count>;

export interface Page<T> {
  /** The next cursor: `"0"` when the rows are done. */
  cursor: string;
  rows: T[];
}

/** A name, a cursor or a status as a string (a Buffer's UTF-8). */
export function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return String(value);
}

/** An integer reply, or a count sent as a string (a FLOAT counter's). */
export function count(value: unknown): Count {
  if (typeof value === 'number' || typeof value === 'bigint') return value;
  const s = text(value);
  if (/^-?\d+$/.test(s)) {
    const n = Number(s);
    return Number.isSafeInteger(n) ? n : BigInt(s);
  }
  return Number(s);
}

export function integer(value: unknown): number {
  return Number(count(value));
}

export function boolean(value: unknown): boolean {
  return integer(value) === 1;
}

export function ok(value: unknown): true {
  if (text(value) !== 'OK') throw new Error(`expected OK, got ${text(value)}`);
  return true;
}

/** Members or items, as the client handed them over. */
export function bytes(value: unknown): Bytes[] {
  return value as Bytes[];
}

export function counts(value: unknown): Count[] {
  return (value as unknown[]).map(count);
}

/** A RESP3 map (an object or a Map) or a RESP2 name/value array as pairs. */
export function pairs(value: unknown): Array<[string, unknown]> {
  if (value instanceof Map) return [...value.entries()].map(([k, v]) => [text(k), v]);
  if (Array.isArray(value)) {
    const out: Array<[string, unknown]> = [];
    for (let i = 0; i + 1 < value.length; i += 2) out.push([text(value[i]), value[i + 1]]);
    return out;
  }
  return Object.entries(value as Record<string, unknown>);
}

/** A ULIST row: every value as handed over. */
export function row(value: unknown): Row<Bytes> {
  const out: Row<Bytes> = {};
  for (const [name, v] of pairs(value)) out[name] = v as Bytes;
  return out;
}

export function rows(value: unknown): Array<Row<Bytes>> {
  return (value as unknown[]).map(row);
}

/** An HCOUNTER row: `value` (the count) as a count, the names' values as handed over. */
export function countedRows(value: unknown): Array<Row<Bytes>> {
  return (value as unknown[]).map((raw) => {
    const out = row(raw);
    out.value = count(out.value);
    return out;
  });
}

function paged(parse: (rows: unknown) => Array<Row<Bytes>>) {
  return (value: unknown): Page<Row<Bytes>> => {
    const [cursor, found] = value as [unknown, unknown];
    return { cursor: text(cursor), rows: parse(found) };
  };
}

export const page = paged(rows);
export const countedPage = paged(countedRows);

/** INFO replies: numbers as numbers, the declaration as its words (the
 * names' own bytes when Buffers are asked for). */
export function info(value: unknown): Record<string, number | Bytes[]> {
  const out: Record<string, number | Bytes[]> = {};
  for (const [name, v] of pairs(value)) out[name] = Array.isArray(v) ? bytes(v) : integer(v);
  return out;
}

/** TOPN.INFO, whole. A field the key has no such thing for is absent
 * (`views`: empty); fields this package does not know (from a newer server)
 * are in `extra` as the client replied them. */
export interface TopnInfo {
  /** Bucket width, seconds. */
  bucket: number;
  /** Buckets in the window. */
  window: number;
  /** Seconds the bucket boundaries sit after the epoch's. */
  align: number;
  /** Distinct members the key's stored buckets hold. */
  members: number;
  /** Buckets of the window that hold entries. */
  buckets: number;
  /** An estimate of the value's heap bytes. */
  memory: number;
  /** The key's VIEWS (buckets each), ascending. */
  views: number[];
  /** Each view's share of `memory`, by its buckets (0 while the key is compact). */
  viewMemory: Record<number, number>;
  /** CAPACITY: counters a bucket keeps. */
  capacity?: number;
  /** CAPACITY: counters held. */
  counters?: number;
  /** CAPACITY: the most a count of the window over-counts. */
  bound?: Count;
  /** CAPACITY: true while `bound` is 0. */
  exact?: boolean;
  extra: Record<string, unknown>;
}

/** TOPN.INFO's fields other than `view-<k>-memory`; `views` is how many
 * views there are, the length of the list. */
const TOPN_INFO_FIELDS = new Set([
  'bucket', 'window', 'align', 'members', 'buckets', 'memory', 'views', 'capacity', 'counters', 'bound', 'exact',
]);

export function topnInfo(value: unknown): TopnInfo {
  const fields = new Map<string, unknown>();
  const viewMemory: Record<number, number> = {};
  const extra: Record<string, unknown> = {};
  for (const [name, v] of pairs(value)) {
    const view = /^view-([0-9]+)-memory$/.exec(name);
    if (view) viewMemory[Number(view[1])] = integer(v);
    else if (TOPN_INFO_FIELDS.has(name)) fields.set(name, v);
    else extra[name] = v;
  }
  const field = (name: string) => integer(fields.get(name));
  const info: TopnInfo = {
    bucket: field('bucket'),
    window: field('window'),
    align: field('align'),
    members: field('members'),
    buckets: field('buckets'),
    memory: field('memory'),
    views: Object.keys(viewMemory)
      .map(Number)
      .sort((a, b) => a - b),
    viewMemory,
    extra,
  };
  if (fields.has('capacity')) {
    info.capacity = field('capacity');
    info.counters = field('counters');
    info.bound = count(fields.get('bound'));
    info.exact = boolean(fields.get('exact'));
  }
  return info;
}

/** A flat `member, number, ...` array as `{ member, [name]: number }`. */
function members<K extends string, V>(name: K, parse: (raw: unknown) => V) {
  return (value: unknown): Array<{ member: Bytes } & Record<K, V>> => {
    const flat = value as unknown[];
    const out = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      out.push({ member: flat[i], [name]: parse(flat[i + 1]) } as { member: Bytes } & Record<K, V>);
    }
    return out;
  };
}

/** TOPN's `member, count, ...` (WITHCOUNTS). */
export const withCounts = members('count', count);

/** TOPN's `member, count, error, ...` (WITHERRORS): the true count lies in
 * `[count - error, count]`; error 0 on an exact key. */
export function withErrors(value: unknown): Array<{ member: Bytes; count: Count; error: Count }> {
  const flat = value as unknown[];
  const out = [];
  for (let i = 0; i + 2 < flat.length; i += 3) {
    out.push({ member: flat[i] as Bytes, count: count(flat[i + 1]), error: count(flat[i + 2]) });
  }
  return out;
}

/** TOPN.COUNT ... WITHERRORS: `[count, error]` per member asked. */
export function countsWithErrors(value: unknown): Array<{ count: Count; error: Count }> {
  return (value as unknown[][]).map(([c, e]) => ({ count: count(c), error: count(e) }));
}

/** RV's `member, time, ...` (WITHSCORES): times in Unix ms. */
export const withTimes = members('time', integer);
