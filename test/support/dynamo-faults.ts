/**
 * DynamoDB as AWS answers under load, in front of DynamoDB Local (which never throttles, never
 * conflicts and keeps its indexes in step with the table). `faultyStore` wraps a function's
 * own DynamoDBDocumentClient: the faults are injected inside the SDK's retry loop, so the
 * client's real retry settings (attempts, which errors are retried) apply as on AWS.
 *
 * - `throttle`: chosen calls answer ProvisionedThroughputExceededException (or
 *   ThrottlingException) on `attempts` attempts in a row; by default on every attempt, so the
 *   SDK's retries run out and the caller sees the throttle.
 * - `conflict`: chosen writes meet a transaction in flight on their item: a single write
 *   answers TransactionConflictException, a transaction is cancelled with reason
 *   TransactionConflict (neither is retried by the SDK).
 * - `retried`: chosen writes land, their answer is lost (a 500 InternalServerError) and the
 *   SDK's retry strategy sends the same request again: the caller sees the second answer, its
 *   `$metadata.attempts` 2. The request is sent as it was serialized, so a transaction's
 *   ClientRequestToken (which the SDK fills in) is the same on both. A client that makes one
 *   attempt only is never chosen.
 * - `inProgress`: a chosen transaction lands, its first attempt gets no answer, and the calls
 *   that send its ClientRequestToken again meet it still in progress
 *   (TransactionInProgressException, which the SDK retries as it retries throttling), every
 *   attempt of `calls` calls in all (the first included); later calls get the first's answer, as
 *   DynamoDB gives it for the token.
 * - `latencyMs`: added before every call.
 * - `indexLag`: a Query on an index does not see the last writes yet: for the next
 *   `indexLag` index Queries after a write, the item shows as it was when an index Query last
 *   returned it (or not at all), as a global secondary index that lags its table does.
 *
 * A call is chosen by `when` (default: every call), then with probability `rate` (default 1
 * when `when` is given, 0 otherwise), drawn from `random` so a seeded run repeats. The plan
 * may be changed between calls. `fastRetries` keeps the attempts but not the back-off waits.
 */
import { ConfiguredRetryStrategy, retryMiddleware } from '@smithy/core/retry';
import {
  InternalServerError,
  ProvisionedThroughputExceededException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
  TransactionInProgressException,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** One call as the middleware sees it: the operation (`UpdateItem`) and its input, attribute values marshalled. */
export interface StoreCall {
  operation: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  input: any;
}

export interface Choice {
  when?: (call: StoreCall) => boolean;
  rate?: number;
}

export interface StoreFaultPlan {
  throttle?: Choice & { attempts?: number; as?: 'ProvisionedThroughputExceeded' | 'Throttling' };
  conflict?: Choice;
  retried?: Choice;
  /**
   * The write lands and the answer of every attempt is lost (the SDK's retries meet what the
   * first wrote, and lose their answers too): the caller gets a 500 for a write that was applied.
   */
  lostOut?: Choice;
  /**
   * The write never lands and every attempt answers 500 (DynamoDB failed it each time): the
   * caller gets the same error `lostOut` gives it, for a write that was not applied.
   */
  failedOut?: Choice;
  inProgress?: Choice & { calls?: number };
  latencyMs?: number;
  indexLag?: number;
}

export interface StoreFaultLog {
  calls: number;
  throttled: number;
  /** Calls whose every attempt was throttled, so the caller saw the throttle. */
  throttledOut: number;
  conflicted: number;
  /** Writes that landed and were sent again (`retried`). */
  retried: number;
  /** Writes that landed and whose every attempt lost its answer (`lostOut`). */
  lostOut: number;
  /** Writes that never landed, every attempt answered 500 (`failedOut`). */
  failedOut: number;
  /** Attempts answered TransactionInProgressException (`inProgress`). */
  inProgress: number;
  staleReads: number;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/** Chooses calls of these operations (`'UpdateItem'`, `'Query'`, ...). */
export const onOperations =
  (...operations: string[]) =>
  (call: StoreCall): boolean =>
    operations.includes(call.operation);

/** Chooses writes: the calls a throttle or a conflict on a hot item hits. */
export const isWrite = (call: StoreCall): boolean => WRITES.has(call.operation);

/** A seeded random source, for runs that repeat: the bench's own, so there is one. */
export { seededRandom } from '../../bench/payloads.js';

/** A single write (a transaction included, not a batch write, whose retry is the caller's): the calls a model's lost answers hit. */
export const isSingleWrite = (call: StoreCall): boolean => call.operation === 'TransactWriteItems' || SINGLE_WRITES.has(call.operation);

/**
 * `real` with `rate` of its single writes landing and losing their answer, the SDK sending
 * them again (`retried`), chosen by `random`: the model tests' store.
 */
export const losingAnswers = (real: DynamoDBDocumentClient, rate: number, random: () => number) =>
  faultyStore(real, { retried: { when: isSingleWrite, rate } }, { random, fastRetries: true });

/**
 * How a model test's store fails: writes land and lose the answer the SDK retries (`retried`,
 * `losingAnswers`); or some also answer 500 to every attempt, landed or not (`refused`,
 * `refusingWrites`); or that, with duplicate detection and failed sends sent again (`resent`);
 * or the weather of a busy table, where a write's retry meets a throttle or a conflict after its
 * first attempt landed (`busy`, `busyTable`).
 */
export type ModelFaults = 'retried' | 'refused' | 'resent' | 'busy';

/**
 * `real` with 10% of its single writes losing their answer as `losingAnswers` does, and 4% each
 * answering 500 to every attempt, landed (`lostOut`) or not (`failedOut`), chosen by `random`:
 * the models' store when they run `refused`, where requests fail.
 */
export const refusingWrites = (real: DynamoDBDocumentClient, random: () => number) =>
  faultyStore(
    real,
    { retried: { when: isSingleWrite, rate: 0.1 }, lostOut: { when: isSingleWrite, rate: 0.04 }, failedOut: { when: isSingleWrite, rate: 0.04 } },
    { random, fastRetries: true },
  );

/**
 * `real` as a busy table answers, every fault at once, chosen by `random`: 6% of its single
 * writes land and lose their answer, the SDK sending them again (`retried`), and 2% each answer
 * 500 to every attempt, landed (`lostOut`) or not (`failedOut`); 3% of all calls (reads
 * included: a write's read-back too) throttled at every attempt, so the caller sees the
 * throttle; 3% of write attempts meeting a transaction in flight (`conflict`, also at the retry
 * of a write that landed); 10% of the transactions sent under a token of the caller's own
 * (store/transact-once.ts) landing unanswered and then found in progress by the next call
 * (`inProgress`); and an index two Queries behind its table. The models' store when
 * they run `busy`: a request fails with a 503 that changed nothing, or a 500 when a write may
 * have landed.
 */
export const busyTable = (real: DynamoDBDocumentClient, random: () => number) =>
  faultyStore(
    real,
    {
      retried: { when: isSingleWrite, rate: 0.06 },
      lostOut: { when: isSingleWrite, rate: 0.02 },
      failedOut: { when: isSingleWrite, rate: 0.02 },
      throttle: { rate: 0.03, attempts: 3 },
      conflict: { rate: 0.03 },
      inProgress: { rate: 0.1, calls: 2 },
      indexLag: 2,
    },
    { random, fastRetries: true },
  );

/** A model test's store as its `faults` say (`losingAnswers`, `refusingWrites`, `busyTable`), its faults drawn from `random`. */
export const modelStore = (real: DynamoDBDocumentClient, faults: ModelFaults, random: () => number) =>
  faults === 'retried' ? losingAnswers(real, 0.15, random) : faults === 'busy' ? busyTable(real, random) : refusingWrites(real, random);

/** An item as the layer sees it: inputs marshalled (`{S: 'x'}`), outputs already plain (the document client's unmarshalling runs outside the layer). */
type Item = Record<string, unknown>;
const text = (v: unknown): string => {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  const a = v as AttributeValue | undefined;
  return a?.S ?? a?.N ?? '';
};
const itemKey = (item: Item) => `${text(item.pk)}|${text(item.sk)}`;

/** The keys a write touches (its items' `pk`/`sk`). */
function writtenKeys(call: StoreCall): string[] {
  const i = call.input;
  if (SINGLE_WRITES.has(call.operation)) return [itemKey(i.Item ?? i.Key)];
  if (call.operation === 'TransactWriteItems') {
    return (i.TransactItems as Record<string, { Item?: Item; Key?: Item }>[]).flatMap((t) =>
      ['Put', 'Update', 'Delete'].filter((k) => t[k]).map((k) => itemKey((t[k]!.Item ?? t[k]!.Key)!)),
    );
  }
  if (call.operation === 'BatchWriteItem') {
    return Object.values(i.RequestItems as Record<string, { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]>)
      .flat()
      .map((r) => itemKey(r.PutRequest?.Item ?? r.DeleteRequest!.Key));
  }
  return [];
}

const metadata = { httpStatusCode: 400 };

function throttleError(as: 'ProvisionedThroughputExceeded' | 'Throttling' = 'ProvisionedThroughputExceeded'): Error {
  const message = 'injected: the level of configured provisioned throughput for the table was exceeded';
  return as === 'Throttling'
    ? new ThrottlingException({ $metadata: metadata, message })
    : new ProvisionedThroughputExceededException({ $metadata: metadata, message });
}

/** What the SDK sees of a write whose answer was lost: a 500, which its retry strategy retries. */
function answerLost(message = 'injected: the answer to a write that landed was lost'): Error {
  return new InternalServerError({ $metadata: { httpStatusCode: 500 }, message });
}

/** A call with the ClientRequestToken of a transaction DynamoDB is still applying: a 400, given before anything is applied. */
function inProgressError(): Error {
  return new TransactionInProgressException({ $metadata: metadata, message: 'injected: the transaction with the given request token is already in progress' });
}

function conflictError(call: StoreCall): Error {
  if (call.operation !== 'TransactWriteItems') {
    return new TransactionConflictException({ $metadata: metadata, message: 'injected: transaction is ongoing for the item' });
  }
  const n = (call.input.TransactItems as unknown[]).length;
  return new TransactionCanceledException({
    $metadata: metadata,
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict${', None'.repeat(n - 1)}]`,
    CancellationReasons: [
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
      ...Array.from({ length: n - 1 }, () => ({ Code: 'None' })),
    ],
  });
}

/** The index's partition value and a test of its sort condition, read off the Query (undefined when not understood). */
function indexScope(input: StoreCall['input']): { partition: string; sortKey?: string; holds: (v: string) => boolean } | undefined {
  const names: Record<string, string> = input.ExpressionAttributeNames ?? {};
  const values: Record<string, AttributeValue> = input.ExpressionAttributeValues ?? {};
  const name = (n: string) => names[n] ?? n;
  const [first, second] = String(input.KeyConditionExpression ?? '').split(/\s+AND\s+(?![^(]*\))/i);
  const eq = /^\s*([#\w]+)\s*=\s*(:\w+)\s*$/.exec(first ?? '');
  if (!eq) return undefined;
  const partition = text(values[eq[2]!]);
  if (!second) return { partition, holds: () => true };
  const numeric = (a: string, b: string) =>
    values[b]?.N !== undefined ? Number(a) - Number(values[b].N) : a < text(values[b]) ? -1 : a > text(values[b]) ? 1 : 0;
  const cmp = /^\s*([#\w]+)\s*(<=|<|>=|>)\s*(:\w+)\s*$/.exec(second);
  if (cmp) {
    const [, key, op, v] = cmp;
    const test = { '<=': (d: number) => d <= 0, '<': (d: number) => d < 0, '>=': (d: number) => d >= 0, '>': (d: number) => d > 0 }[op as '<='];
    return { partition, sortKey: name(key!), holds: (x) => test(numeric(x, v!)) };
  }
  const between = /^\s*([#\w]+)\s+BETWEEN\s+(:\w+)\s+AND\s+(:\w+)\s*$/i.exec(second);
  if (between) return { partition, sortKey: name(between[1]!), holds: (x) => numeric(x, between[2]!) >= 0 && numeric(x, between[3]!) <= 0 };
  return undefined;
}

/** The index definitions' key attribute names, by index. */
const indexKeys: Record<string, { partition: string; sort: string }> = { ready: { partition: 'rpk', sort: 'rsk' }, due: { partition: 'dpk', sort: 'dsk' } };

/** A client like `real` (same table, same retry settings) whose calls meet the faults of `plan`. */
export function faultyStore(
  real: DynamoDBDocumentClient,
  plan: StoreFaultPlan,
  options: { random?: () => number; fastRetries?: boolean } = {},
): { db: DynamoDBDocumentClient; plan: StoreFaultPlan; log: StoreFaultLog } {
  const random = options.random ?? Math.random;
  const log: StoreFaultLog = { calls: 0, throttled: 0, throttledOut: 0, conflicted: 0, retried: 0, lostOut: 0, failedOut: 0, inProgress: 0, staleReads: 0 };
  /** Invocations whose every answer is lost (`lostOut`). */
  const losing = new Set<string>();
  /** Invocations whose every attempt fails unapplied (`failedOut`). */
  const failing = new Set<string>();
  const chosen = (choice: Choice | undefined, call: StoreCall) => {
    if (!choice) return false;
    if (choice.when && !choice.when(call)) return false;
    return random() < (choice.rate ?? (choice.when ? 1 : 0));
  };
  /** Transactions in progress by ClientRequestToken: calls still to meet them so (`inProgress`). */
  const progressing = new Map<string, number>();
  /** Invocations whose every attempt meets their transaction in progress. */
  const meetingProgress = new Set<string>();
  /** Throttled calls by invocation id: attempts still to fail. */
  const throttling = new Map<string, number>();
  /** Keys written lately: index Queries still to miss them. */
  const lagging = new Map<string, number>();
  /** What an index Query last returned of each item, by index and key. */
  const lastSeen = new Map<string, Item>();

  const stack = real.middlewareStack.clone();
  stack.add(
    (next, context) => async (args) => {
      const call: StoreCall = { operation: String(context.commandName ?? '').replace(/Command$/, ''), input: args.input };
      const headers = (args.request as { headers?: Record<string, string> } | undefined)?.headers ?? {};
      const invocation = headers['amz-sdk-invocation-id'] ?? '';
      const attempt = Number(/attempt=(\d+)/.exec(headers['amz-sdk-request'] ?? '')?.[1] ?? 1);
      const maxAttempts = Number(/max=(\d+)/.exec(headers['amz-sdk-request'] ?? '')?.[1] ?? 1);
      if (attempt === 1) log.calls++;
      if (plan.latencyMs) await new Promise((r) => setTimeout(r, plan.latencyMs));
      if (attempt === 1 && chosen(plan.throttle, call)) throttling.set(invocation, plan.throttle?.attempts ?? Infinity);
      const left = throttling.get(invocation) ?? 0;
      if (left > 0) {
        throttling.set(invocation, left - 1);
        log.throttled++;
        if (attempt >= maxAttempts) log.throttledOut++;
        if (left - 1 === 0 || attempt >= maxAttempts) throttling.delete(invocation);
        throw throttleError(plan.throttle?.as);
      }
      throttling.delete(invocation);
      const token = call.operation === 'TransactWriteItems' ? String(call.input.ClientRequestToken ?? '') : '';
      if (attempt === 1 && token && (progressing.get(token) ?? 0) > 0) {
        progressing.set(token, progressing.get(token)! - 1);
        meetingProgress.add(invocation);
      }
      if (meetingProgress.has(invocation)) {
        if (attempt >= maxAttempts) meetingProgress.delete(invocation);
        log.inProgress++;
        throw inProgressError();
      }
      if (attempt === 1 && token && chosen(plan.inProgress, call)) {
        // Applied, and no answer came back; the next attempts and calls find it in progress.
        await next(args).catch(() => undefined);
        progressing.set(token, (plan.inProgress?.calls ?? 2) - 1);
        if (attempt < maxAttempts) meetingProgress.add(invocation);
        throw answerLost('injected: no answer from a transaction that landed');
      }
      if (isWrite(call) && chosen(plan.conflict, call)) {
        log.conflicted++;
        throw conflictError(call);
      }
      if (attempt === 1 && isWrite(call) && chosen(plan.lostOut, call)) {
        losing.add(invocation);
        log.lostOut++;
      }
      if (attempt === 1 && isWrite(call) && chosen(plan.failedOut, call)) {
        failing.add(invocation);
        log.failedOut++;
      }
      if (failing.has(invocation)) {
        if (attempt >= maxAttempts) failing.delete(invocation);
        throw answerLost('injected: a write that was not applied failed');
      }
      if (losing.has(invocation)) {
        // Applied (or refused by what the first attempt wrote), and the answer lost all the same.
        await next(args).catch(() => undefined);
        if (attempt >= maxAttempts) losing.delete(invocation);
        throw answerLost();
      }
      const result = await next(args);
      if (attempt === 1 && attempt < maxAttempts && isWrite(call) && chosen(plan.retried, call)) {
        // The write landed and its answer is lost: the SDK's retry strategy sends the same
        // request again (its next attempt, counted in the answer's `$metadata.attempts`).
        log.retried++;
        throw answerLost();
      }
      if (plan.indexLag && isWrite(call)) for (const key of writtenKeys(call)) lagging.set(key, plan.indexLag);
      if (call.operation === 'Query' && call.input.IndexName) lagIndex(call, (result.output as { Items?: Item[] }).Items);
      return result;
    },
    { step: 'deserialize', priority: 'high', name: 'sluiceStoreFaults' },
  );
  if (options.fastRetries) {
    const config = real.config as unknown as { maxAttempts: () => Promise<number> };
    const strategy = new ConfiguredRetryStrategy(async () => config.maxAttempts(), 0);
    stack.add(retryMiddleware({ ...config, retryStrategy: async () => strategy } as never), {
      name: 'retryMiddleware',
      tags: ['RETRY'],
      step: 'finalizeRequest',
      priority: 'high',
      override: true,
    });
  }

  /** Replaces what the index has not caught up with by what it showed before. */
  function lagIndex(call: StoreCall, items: Item[] | undefined) {
    if (!items) return;
    const index = String(call.input.IndexName);
    const keys = indexKeys[index];
    const scope = indexScope(call.input);
    const fresh: Item[] = [];
    const present = new Set<string>();
    for (const item of items) {
      const key = itemKey(item);
      present.add(key);
      if (!lagging.has(key)) {
        fresh.push(item);
        lastSeen.set(`${index}|${key}`, item);
        continue;
      }
      log.staleReads++;
      const before = lastSeen.get(`${index}|${key}`);
      if (before) fresh.push(before);
    }
    // Lately written items the index still shows where they were (moved away or deleted since).
    if (keys && scope) {
      for (const key of lagging.keys()) {
        if (present.has(key)) continue;
        const before = lastSeen.get(`${index}|${key}`);
        if (!before || text(before[keys.partition]) !== scope.partition || !scope.holds(text(before[keys.sort]))) continue;
        log.staleReads++;
        fresh.push(before);
      }
      const sortOf = (i: Item) => text(i[keys.sort]);
      const numeric = keys.sort === 'dsk';
      fresh.sort((a, b) => (numeric ? Number(sortOf(a)) - Number(sortOf(b)) : sortOf(a) < sortOf(b) ? -1 : sortOf(a) > sortOf(b) ? 1 : 0));
      if (call.input.ScanIndexForward === false) fresh.reverse();
    }
    items.splice(0, items.length, ...fresh);
    for (const [key, n] of lagging) {
      if (n <= 1) lagging.delete(key);
      else lagging.set(key, n - 1);
    }
  }

  // The wrapper shares the real client's config and connections, not its middleware (nor the
  // handlers it caches), so the real client stays fault-free for the test's own checks.
  const db = Object.create(real, {
    middlewareStack: { value: stack, writable: true, configurable: true },
    handlers: { value: undefined, writable: true, configurable: true },
  }) as DynamoDBDocumentClient;
  return { db, plan, log };
}
