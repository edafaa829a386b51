/**
 * The counting client: a DynamoDBDocumentClient whose `send` asks DynamoDB for the capacity
 * of every call (`ReturnConsumedCapacity: 'INDEXES'`) and records it, call by call, with a
 * label saying what the call touched (entity, message, ready index, ...). A scenario runs one
 * broker operation inside `meter.measure(...)` and gets back the tally of the calls it made.
 *
 * Two numbers are kept for each call:
 * - `reported`: what DynamoDB Local answered, as it is;
 * - `billed`: the same with the rules of AWS's billing that DynamoDB Local does not follow
 *   (each checked by scenarios/verify.ts in every run and listed in the report): a Query that
 *   finds nothing still costs its minimum read (0.5 unit eventually consistent, 1 consistent);
 *   a BatchGetItem costs that minimum for every key it asks for, found or not (DynamoDB Local
 *   sums only what it found); and a transaction costs two units per 1 KB of every item in it. DynamoDB Local reports a
 *   transaction as if it held one item, so a transaction's units are computed from its items
 *   (the items it deletes are read first, outside the meter, to size them), plus one unit
 *   per index entry written or removed.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient, dynamoDbClient } from '../lib/deps.js';
import { tableDefinition } from '../lib/store/table.js';
import { itemBytes } from '../lib/item-size.js';
import { localCredentials, localRegion } from '../infra/local/dynamodb-local.js';

/** DynamoDB API names of the calls that accept ReturnConsumedCapacity. */
export type CallType =
  'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query' | 'Scan' | 'BatchGetItem' | 'BatchWriteItem' | 'TransactWriteItems' | 'TransactGetItems';

const commandTypes: Record<string, CallType> = {
  GetCommand: 'GetItem',
  GetItemCommand: 'GetItem',
  PutCommand: 'PutItem',
  PutItemCommand: 'PutItem',
  UpdateCommand: 'UpdateItem',
  UpdateItemCommand: 'UpdateItem',
  DeleteCommand: 'DeleteItem',
  DeleteItemCommand: 'DeleteItem',
  QueryCommand: 'Query',
  ScanCommand: 'Scan',
  BatchGetCommand: 'BatchGetItem',
  BatchGetItemCommand: 'BatchGetItem',
  BatchWriteCommand: 'BatchWriteItem',
  BatchWriteItemCommand: 'BatchWriteItem',
  TransactWriteCommand: 'TransactWriteItems',
  TransactWriteItemsCommand: 'TransactWriteItems',
  TransactGetCommand: 'TransactGetItems',
  TransactGetItemsCommand: 'TransactGetItems',
};

const readTypes = new Set<CallType>(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);

interface ConsumedCapacityShape {
  TableName?: string;
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
  Table?: { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
  LocalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

/** One DynamoDB call as the meter saw it. */
export interface CallRecord {
  type: CallType;
  /** What the call touched: `entity`, `message`, `dead-letter message`, `ready index`, ... */
  label: string;
  kind: 'read' | 'write';
  consistent: boolean;
  /** Partition keys written (PutItem, BatchWriteItem puts, transaction puts): for the spread of writes. */
  writtenKeys: string[];
  ok: boolean;
  errorName?: string;
  /** DynamoDB answered with ConsumedCapacity. */
  capacityReported: boolean;
  reported: { total: number; table: number; indexes: Record<string, number> };
  billed: { total: number; table: number; indexes: Record<string, number> };
  /**
   * While the meter tracks keys: the billed write units by where they landed, `table <pk>` or
   * `<index> <index partition key>` (see `unitsByKey`).
   */
  writeUnitsByKey?: Record<string, number>;
  ms: number;
}

/** Read and write units, billed or as reported. */
export interface ReadWriteUnits {
  readUnits: number;
  writeUnits: number;
}

export interface Tally extends ReadWriteUnits {
  /** DynamoDB requests. */
  requests: number;
  reported: ReadWriteUnits;
  /** Units by where they were spent: `table`, `ready`, `due`. */
  byTarget: Record<string, ReadWriteUnits>;
  failedConditions: number;
  /** Write units by partition key (`table <pk>`, `<index> <key>`), from the calls made while the meter tracked keys. */
  writeUnitsByKey: Record<string, number>;
  calls: CallRecord[];
}

export const emptyTally = (): Tally => ({
  requests: 0,
  readUnits: 0,
  writeUnits: 0,
  reported: { readUnits: 0, writeUnits: 0 },
  byTarget: {},
  failedConditions: 0,
  writeUnitsByKey: {},
  calls: [],
});

export function tallyOf(calls: CallRecord[]): Tally {
  const t = emptyTally();
  for (const c of calls) {
    t.requests++;
    t.calls.push(c);
    if (!c.ok) t.failedConditions++;
    const add = (key: string, units: number) => {
      const slot = (t.byTarget[key] ??= { readUnits: 0, writeUnits: 0 });
      if (c.kind === 'read') slot.readUnits += units;
      else slot.writeUnits += units;
    };
    add('table', c.billed.table);
    for (const [index, units] of Object.entries(c.billed.indexes)) add(index, units);
    for (const [key, units] of Object.entries(c.writeUnitsByKey ?? {})) t.writeUnitsByKey[key] = (t.writeUnitsByKey[key] ?? 0) + units;
    if (c.kind === 'read') {
      t.readUnits += c.billed.total;
      t.reported.readUnits += c.reported.total;
    } else {
      t.writeUnits += c.billed.total;
      t.reported.writeUnits += c.reported.total;
    }
  }
  return t;
}

/** A tally divided by `n` (per message of a batch), calls kept as they are. */
export function perMessage(t: Tally, n: number): Tally {
  const byTarget: Tally['byTarget'] = {};
  for (const [k, v] of Object.entries(t.byTarget)) byTarget[k] = { readUnits: v.readUnits / n, writeUnits: v.writeUnits / n };
  const writeUnitsByKey = Object.fromEntries(Object.entries(t.writeUnitsByKey).map(([k, v]) => [k, v / n]));
  return {
    writeUnitsByKey,
    requests: t.requests / n,
    readUnits: t.readUnits / n,
    writeUnits: t.writeUnits / n,
    reported: { readUnits: t.reported.readUnits / n, writeUnits: t.reported.writeUnits / n },
    byTarget,
    failedConditions: t.failedConditions / n,
    calls: t.calls,
  };
}

/** What a partition key is, in words. */
export function labelOfPk(pk: unknown): string {
  if (typeof pk !== 'string') return 'item';
  if (pk === 'queues' || pk === 'topics' || pk.startsWith('topic/')) return 'entity';
  if (pk === 'auth') return 'auth rule';
  if (pk.startsWith('stats/')) return 'stats';
  if (pk.startsWith('sess/')) return 'session';
  if (pk === 'gc') return 'tombstones';
  if (pk.startsWith('remind/')) return 'lock reminder';
  const m = /^msg\/[^/]+\/(a|dlq|tdlq)\//.exec(pk);
  if (m) return m[1] === 'a' ? 'message' : m[1] === 'dlq' ? 'dead-letter message' : 'transfer dead-letter message';
  return `item(${pk.split('/')[0]})`;
}

type Input = Record<string, unknown>;

function describe(type: CallType, input: Input): { label: string; writtenKeys: string[]; consistent: boolean } {
  const consistent = input.ConsistentRead === true;
  const pkOfKey = (k: unknown) => (k as { pk?: unknown } | undefined)?.pk;
  switch (type) {
    case 'GetItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return { label: labelOfPk(pkOfKey(input.Key)), writtenKeys: [], consistent };
    case 'PutItem': {
      const pk = pkOfKey(input.Item);
      return { label: labelOfPk(pk), writtenKeys: typeof pk === 'string' ? [pk] : [], consistent };
    }
    case 'Query':
    case 'Scan': {
      if (typeof input.IndexName === 'string') return { label: `${input.IndexName} index`, writtenKeys: [], consistent };
      const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
      const pk = values[':pk'] ?? values[':gc'] ?? Object.values(values)[0];
      return { label: labelOfPk(pk), writtenKeys: [], consistent };
    }
    case 'BatchGetItem': {
      const req = (input.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>;
      const keys = Object.values(req).flatMap((r) => r.Keys ?? []);
      // A BatchGetItem asks for consistency per table, not at its top level.
      const consistentRead = Object.values(req).some((r) => r.ConsistentRead === true);
      return { label: `${keys.length}× ${labelOfPk(pkOfKey(keys[0]))}`, writtenKeys: [], consistent: consistentRead };
    }
    case 'BatchWriteItem': {
      const req = (input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item?: Input }; DeleteRequest?: { Key?: Input } }[]>;
      const all = Object.values(req).flat();
      const puts = all.filter((r) => r.PutRequest).map((r) => pkOfKey(r.PutRequest?.Item));
      const dels = all.filter((r) => r.DeleteRequest).map((r) => pkOfKey(r.DeleteRequest?.Key));
      const parts = [];
      if (puts.length) parts.push(`put ${puts.length}× ${labelOfPk(puts[0])}`);
      if (dels.length) parts.push(`delete ${dels.length}× ${labelOfPk(dels[0])}`);
      return { label: parts.join(' + '), writtenKeys: puts.filter((p): p is string => typeof p === 'string'), consistent };
    }
    case 'TransactWriteItems': {
      const items = (input.TransactItems ?? []) as Record<string, { Key?: Input; Item?: Input }>[];
      const parts: string[] = [];
      const written: string[] = [];
      for (const item of items) {
        const [action, body] = Object.entries(item)[0] ?? ['?', {}];
        const pk = pkOfKey(body.Key ?? body.Item);
        if (action === 'Put' && typeof pk === 'string') written.push(pk);
        parts.push(`${action.toLowerCase()} ${labelOfPk(pk)}`);
      }
      return { label: parts.join(' + '), writtenKeys: written, consistent };
    }
    case 'TransactGetItems':
      return { label: 'transact get', writtenKeys: [], consistent: true };
  }
}

function sumIndexes(c: ConsumedCapacityShape | undefined, into: Record<string, number>) {
  for (const [name, v] of Object.entries(c?.GlobalSecondaryIndexes ?? {})) into[name] = (into[name] ?? 0) + (v.CapacityUnits ?? 0);
  for (const [name, v] of Object.entries(c?.LocalSecondaryIndexes ?? {})) into[name] = (into[name] ?? 0) + (v.CapacityUnits ?? 0);
}

/** Reported capacity (one object or a list of them) to table + index units. */
function readCapacity(raw: unknown): { found: boolean; total: number; table: number; indexes: Record<string, number> } {
  const list = (Array.isArray(raw) ? raw : raw ? [raw] : []) as ConsumedCapacityShape[];
  const indexes: Record<string, number> = {};
  let total = 0;
  let table = 0;
  for (const c of list) {
    total += c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0);
    table += c.Table?.CapacityUnits ?? 0;
    sumIndexes(c, indexes);
  }
  return { found: list.length > 0, total, table, indexes };
}

/**
 * AWS's billing rules DynamoDB Local does not apply (see the file comment). Both are on by
 * default; main.ts sets them from what the verification scenario finds Local reporting.
 */
export const billingRules = { emptyQueryFloor: true, transactionsFromItems: true };

type Units = { total: number; table: number; indexes: Record<string, number> };

/** Approximate DynamoDB item size (attribute names + values), as DynamoDB sizes items for capacity. */
/** DynamoDB's size of an item (lib/item-size.ts, the one the broker decides by). */
export { itemBytes };

const indexesOf = (item: Record<string, unknown> | undefined) =>
  item
    ? Object.values(tableDefinition.indexes)
        .filter((i) => item[i.partitionKey] !== undefined && item[i.sortKey] !== undefined)
        .map((i) => i.name)
    : [];

/** AWS's price of a transaction: 2 units per 1 KB of each item; one unit per index entry it adds or removes. */
async function transactionUnits(input: Input, read: (tableName: string, key: Input) => Promise<Record<string, unknown> | undefined>): Promise<Units> {
  const items = (input.TransactItems ?? []) as Record<string, { TableName?: string; Key?: Input; Item?: Input }>[];
  let table = 0;
  const indexes: Record<string, number> = {};
  for (const entry of items) {
    const [action, body] = Object.entries(entry)[0] ?? [];
    if (!action || !body) continue;
    const existing = action === 'Put' ? undefined : await read(body.TableName ?? '', body.Key ?? {});
    const sized = action === 'Put' ? body.Item : existing;
    table += 2 * Math.max(1, Math.ceil(itemBytes(sized ?? {}) / 1024));
    const touched = action === 'Put' ? indexesOf(body.Item) : action === 'Delete' ? indexesOf(existing) : [];
    for (const name of touched) indexes[name] = (indexes[name] ?? 0) + 1;
  }
  return { total: table + Object.values(indexes).reduce((a, b) => a + b, 0), table, indexes };
}

/** The keys a BatchGetItem asks for: AWS reads each as its own GetItem, billed also when there is no item. */
const batchGetKeys = (input: Input) =>
  Object.values((input.RequestItems ?? {}) as Record<string, { Keys?: unknown[] }>).reduce((n, r) => n + (r.Keys?.length ?? 0), 0);

function billedOf(type: CallType, consistent: boolean, r: Units, transaction?: Units, keys = 0): Units {
  if (transaction) return transaction;
  const indexes = { ...r.indexes };
  let table = r.table;
  // DynamoDB Local sums the items a BatchGetItem found; AWS bills every key asked for at least
  // half a unit (a whole one consistently), found or not, each item rounded up on its own.
  if (type === 'BatchGetItem') table = Math.max(table, keys * (consistent ? 1 : 0.5));
  if (billingRules.emptyQueryFloor && (type === 'Query' || type === 'Scan')) {
    const floor = consistent ? 1 : 0.5;
    if (r.total < floor) {
      // Charged to where the query ran: the index it names, or the table.
      const index = Object.keys(indexes)[0];
      if (index !== undefined) indexes[index] = floor;
      else table = floor;
    }
  }
  const total = table + Object.values(indexes).reduce((a, b) => a + b, 0);
  return { total, table, indexes };
}

type Item = Record<string, unknown>;

/** One item a write touched: its table key, and the item before and after the call (as read outside the meter). */
interface Touch {
  pk: string;
  before: Item | undefined;
  after: Item | undefined;
}

/** The items a write call touches, with the table keys to read them by. */
interface TouchedKey {
  tableName: string;
  key: Item;
  /** The item a put writes; otherwise it is read after the call. */
  put?: Item | undefined;
  deleted?: boolean;
}

function touchedKeys(type: CallType, input: Input): TouchedKey[] {
  const keyOf = (item: Item | undefined): Item => ({ pk: item?.pk, sk: item?.sk });
  switch (type) {
    case 'PutItem':
      return [{ tableName: input.TableName as string, key: keyOf(input.Item as Item), put: input.Item as Item }];
    case 'UpdateItem':
      return [{ tableName: input.TableName as string, key: input.Key as Item }];
    case 'DeleteItem':
      return [{ tableName: input.TableName as string, key: input.Key as Item, deleted: true }];
    case 'BatchWriteItem':
      return Object.entries((input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item?: Item }; DeleteRequest?: { Key?: Item } }[]>).flatMap(
        ([tableName, requests]) =>
          requests.map((r) =>
            r.PutRequest ? { tableName, key: keyOf(r.PutRequest.Item), put: r.PutRequest.Item } : { tableName, key: r.DeleteRequest?.Key ?? {}, deleted: true },
          ),
      );
    case 'TransactWriteItems':
      return ((input.TransactItems ?? []) as Record<string, { TableName?: string; Key?: Item; Item?: Item }>[]).flatMap((entry): TouchedKey[] => {
        const [action, body] = Object.entries(entry)[0] ?? [];
        if (!action || !body) return [];
        const tableName = body.TableName ?? '';
        if (action === 'Put') return [{ tableName, key: keyOf(body.Item), put: body.Item }];
        return [{ tableName, key: body.Key ?? {}, ...(action === 'Delete' ? { deleted: true } : {}) }];
      });
    default:
      return [];
  }
}

type IndexDefinition = (typeof tableDefinition.indexes)[keyof typeof tableDefinition.indexes];

/** The index entries a change adds, removes or rewrites, by the index partition key they are in. */
function indexChanges(index: IndexDefinition, before: Item | undefined, after: Item | undefined): string[] {
  const entry = (item: Item | undefined) =>
    item && item[index.partitionKey] !== undefined && item[index.sortKey] !== undefined
      ? { pk: String(item[index.partitionKey]), sk: String(item[index.sortKey]) }
      : undefined;
  const was = entry(before);
  const is = entry(after);
  if (!was && !is) return [];
  if (!was || !is) return [(was ?? is)!.pk];
  if (was.pk !== is.pk || was.sk !== is.sk) return [was.pk, is.pk];
  const projected = (item: Item) => JSON.stringify(index.projectedAttributes.map((a) => item[a] ?? null));
  return projected(before!) === projected(after!) ? [] : [is.pk];
}

/**
 * Where a write's billed units landed: the table's units shared among the items it touched by
 * their size in KB (each at its `pk`), each index's among the entries it added, removed or
 * rewrote (each at its index partition key). This is what a hot partition key is made of.
 */
export function unitsByKey(touches: Touch[], billed: Units): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (key: string, units: number) => (out[key] = (out[key] ?? 0) + units);
  const sizes = touches.map((t) => Math.max(1, Math.ceil(Math.max(itemBytes(t.before ?? {}), itemBytes(t.after ?? {})) / 1024)));
  const totalSize = sizes.reduce((a, b) => a + b, 0);
  touches.forEach((t, i) => add(`table ${t.pk}`, (billed.table * sizes[i]!) / totalSize));
  for (const [name, units] of Object.entries(billed.indexes)) {
    if (units === 0) continue;
    const index = Object.values(tableDefinition.indexes).find((i) => i.name === name);
    const changes = index ? touches.flatMap((t) => indexChanges(index, t.before, t.after)) : [];
    if (changes.length === 0) add(`${name} ?`, units);
    for (const key of changes) add(`${name} ${key}`, units / changes.length);
  }
  return out;
}

export interface Coverage {
  calls: number;
  withCapacity: number;
  zeroReported: number;
}

/**
 * Meters one DynamoDBDocumentClient. Every call is recorded in every open window, so a
 * scenario may nest windows (the whole lifecycle, and each request within it).
 */
export class CapacityMeter {
  private windows: CallRecord[][] = [];
  /** Per call type: how many calls, and how many came back with ConsumedCapacity. */
  readonly coverage: Partial<Record<CallType, Coverage>> = {};
  /** While true, calls are not recorded in any window (coverage is still counted). */
  paused = false;
  /** Every PutItem-like write's partition key, while `trackWrites` is on. */
  trackWrites = false;
  readonly writtenKeys = new Map<string, number>();
  /**
   * While true, each write call's units are attributed to the partition keys they landed on
   * (`CallRecord.writeUnitsByKey`). The items it touches are read before and after it,
   * outside the meter: units stay as they are, but handler times grow, so time nothing then.
   */
  trackKeys = false;
  /**
   * Time spent reading items for `trackKeys`, ms: to take out of a handler's time. Wall-clock
   * time while at least one such read is in flight, so concurrent calls are not counted twice.
   */
  keyReadMs = 0;
  private keyReadsInFlight = 0;
  private keyReadsSince = 0;

  private async keyReading<T>(reads: () => Promise<T>): Promise<T> {
    if (this.keyReadsInFlight++ === 0) this.keyReadsSince = performance.now();
    try {
      return await reads();
    } finally {
      if (--this.keyReadsInFlight === 0) this.keyReadMs += performance.now() - this.keyReadsSince;
    }
  }

  constructor(readonly db: DynamoDBDocumentClient) {
    type AnySend = (command: { input: Input; constructor: { name: string } }, ...rest: unknown[]) => Promise<Record<string, unknown>>;
    const target = db as unknown as { send: AnySend };
    const original = target.send.bind(db) as AnySend;
    target.send = async (command, ...rest) => {
      const type = commandTypes[command.constructor.name];
      if (!type) return original(command, ...rest);
      command.input.ReturnConsumedCapacity = 'INDEXES';
      const info = describe(type, command.input);
      const read = async (TableName: string, Key: Item) =>
        (await original(new GetCommand({ TableName, Key, ConsistentRead: true }) as never)).Item as Item | undefined;
      const transaction = type === 'TransactWriteItems' && billingRules.transactionsFromItems ? await transactionUnits(command.input, read) : undefined;
      const keyed = this.trackKeys && !readTypes.has(type) ? touchedKeys(type, command.input) : [];
      const befores = keyed.length > 0 ? await this.keyReading(() => Promise.all(keyed.map((k) => read(k.tableName, k.key)))) : [];
      const started = performance.now();
      let output: Record<string, unknown> | undefined;
      let error: unknown;
      try {
        output = await original(command, ...rest);
      } catch (e) {
        error = e;
      }
      const ms = performance.now() - started;
      const raw = output?.ConsumedCapacity ?? (error as { ConsumedCapacity?: unknown } | undefined)?.ConsumedCapacity;
      const reported = readCapacity(raw);
      const cov = (this.coverage[type] ??= { calls: 0, withCapacity: 0, zeroReported: 0 });
      if (output) {
        cov.calls++;
        if (reported.found) cov.withCapacity++;
        if (reported.found && reported.total === 0) cov.zeroReported++;
      }
      const billed = billedOf(type, info.consistent, reported, transaction, type === 'BatchGetItem' ? batchGetKeys(command.input) : 0);
      // Nothing to read unless the meter tracks keys: no wait for an empty read, and no time counted for one.
      const touches: Touch[] =
        keyed.length === 0
          ? []
          : await this.keyReading(() =>
              Promise.all(
                keyed.map(async (k, i) => ({
                  pk: String(k.key.pk),
                  before: befores[i],
                  after: error !== undefined ? befores[i] : k.deleted ? undefined : (k.put ?? (await read(k.tableName, k.key))),
                })),
              ),
            );
      const record: CallRecord = {
        type,
        label: info.label,
        kind: readTypes.has(type) ? 'read' : 'write',
        consistent: info.consistent,
        writtenKeys: info.writtenKeys,
        ok: error === undefined,
        ...(error !== undefined ? { errorName: (error as Error)?.name ?? 'Error' } : {}),
        capacityReported: reported.found,
        reported: { total: reported.total, table: reported.table, indexes: reported.indexes },
        billed,
        ...(keyed.length > 0 ? { writeUnitsByKey: unitsByKey(touches, billed) } : {}),
        ms,
      };
      if (!this.paused) for (const w of this.windows) w.push(record);
      if (this.trackWrites && record.ok) for (const k of record.writtenKeys) this.writtenKeys.set(k, (this.writtenKeys.get(k) ?? 0) + 1);
      if (error !== undefined) throw error;
      return output!;
    };
  }

  /** Runs `fn` with a window open and returns its result with the calls it made. */
  async measure<T>(fn: () => Promise<T>): Promise<{ result: T; tally: Tally; ms: number }> {
    const window: CallRecord[] = [];
    this.windows.push(window);
    const started = performance.now();
    try {
      const result = await fn();
      return { result, tally: tallyOf(window), ms: performance.now() - started };
    } finally {
      this.windows.splice(this.windows.indexOf(window), 1);
    }
  }
}

/** A metered document client on a DynamoDB endpoint (its own connection pool). */
export function meteredClient(endpoint: string): { db: DynamoDBDocumentClient; meter: CapacityMeter; destroy: () => void } {
  const client = dynamoDbClient({ endpoint, region: localRegion, credentials: localCredentials });
  const db = documentClient(client);
  return { db, meter: new CapacityMeter(db), destroy: () => client.destroy() };
}

/** `UpdateItem message: table 2W, ready 2W` — one call in words. */
export function describeCall(c: CallRecord): string {
  const unit = c.kind === 'read' ? 'R' : 'W';
  const parts = c.kind === 'read' && c.billed.table === 0 && Object.keys(c.billed.indexes).length > 0 ? [] : [`table ${fmtUnits(c.billed.table)}${unit}`];
  for (const [k, v] of Object.entries(c.billed.indexes)) if (v > 0 || c.kind === 'read') parts.push(`${k} ${fmtUnits(v)}${unit}`);
  const flags = [c.consistent ? 'consistent' : '', c.ok ? '' : `failed: ${c.errorName ?? ''}`].filter(Boolean).join(', ');
  return `${c.type} ${c.label}${flags ? ` (${flags})` : ''}: ${parts.join(', ')}`;
}

export const fmtUnits = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/0+$/, ''));

/** Distinct call shapes with counts: `2× GetItem entity: table 0.5R`. */
export function summarizeCalls(calls: CallRecord[]): string[] {
  const counts = new Map<string, number>();
  for (const c of calls) {
    const d = describeCall(c);
    counts.set(d, (counts.get(d) ?? 0) + 1);
  }
  return [...counts].map(([d, n]) => (n > 1 ? `${n}× ${d}` : d));
}
