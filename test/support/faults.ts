/**
 * Fault injection for crash-safety tests (D3): a Deps whose `db` is the real
 * DynamoDBDocumentClient, except that the Nth `send` of a chosen command throws, as if the
 * Lambda died at that point, and every later one throws too: nothing of a dead process runs
 * (`afterwards: 'lives'` for a refusal the request survives). `phase: 'before'` dies before the
 * call reaches DynamoDB (the write never happened); `phase: 'after'` dies once DynamoDB has
 * answered (the write is durable but the caller never learns it).
 *
 * For DynamoDB answering as AWS does under load (throttles through the SDK's retries,
 * conflicting transactions, an index that lags its table), see dynamo-faults.ts.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../../lib/deps.js';
import type { Json } from './api.js';

/** The error a "crashed" call throws; its name is no DynamoDB error, so nobody swallows it. */
export class InjectedCrash extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InjectedCrash';
  }
}

export interface Fault {
  /** Which commands count toward `nth`. */
  match: (command: unknown) => boolean;
  /** The matching call that fails (1-based). Default 1. */
  nth?: number;
  /** How many consecutive matching calls fail from the nth on. Default 1. */
  times?: number;
  /** Die before the call is sent, or after it succeeded. Default 'before'. */
  phase?: 'before' | 'after';
  /**
   * Instead of dying, run this at the fault point (e.g. another actor changes the table
   * between the mover's read and its write). Default: throw InjectedCrash.
   */
  interleave?: (command: unknown) => Promise<void>;
  /**
   * What happens to the process after the crash. 'dies' (default): every later call through
   * this client throws too, as nothing runs after a Lambda died (calls already sent land or
   * not, their answers unseen). 'lives': only the chosen calls fail and the rest of the
   * request goes on, as after DynamoDB refused a call; or, for a test that needs it, calls
   * sent in the same instant as the one that died still go out.
   */
  afterwards?: 'dies' | 'lives';
}

export interface FaultLog {
  /** Matching calls seen so far. */
  seen: number;
  /** Calls that were made to fail. */
  tripped: number;
}

/**
 * What DynamoDB answers a TransactWriteItems that collides with another transaction or write
 * in flight on one of its items (cancellation reason `TransactionConflict`). DynamoDB Local
 * serializes transactions and never says it, so tests inject it.
 */
export function transactionConflict(items = 2): TransactionCanceledException {
  return new TransactionCanceledException({
    $metadata: { httpStatusCode: 400 },
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict${', None'.repeat(items - 1)}]`,
    CancellationReasons: [
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
      ...Array.from({ length: items - 1 }, () => ({ Code: 'None' })),
    ],
  });
}

type AnyCtor = abstract new (...args: never[]) => unknown;

/** Matches commands of the given classes (e.g. `is(TransactWriteCommand)`). */
export const is =
  (...classes: AnyCtor[]) =>
  (command: unknown): boolean =>
    classes.some((c) => command instanceof c);

/** Input of a command, for finer matches (`inputOf(c).Item?.pk === pk`). */
export const inputOf = (command: unknown): Json => (command as { input?: unknown }).input ?? {};

/** Both conditions hold. */
export const both =
  (a: (c: unknown) => boolean, b: (c: unknown) => boolean) =>
  (c: unknown): boolean =>
    a(c) && b(c);

/** A `db` that behaves like `real` except for the planned fault. */
export function faultyClient(real: DynamoDBDocumentClient, fault: Fault): { db: DynamoDBDocumentClient; log: FaultLog } {
  const nth = fault.nth ?? 1;
  const times = fault.times ?? 1;
  const phase = fault.phase ?? 'before';
  const log: FaultLog = { seen: 0, tripped: 0 };
  const dies = !fault.interleave && (fault.afterwards ?? 'dies') === 'dies';
  let dead: string | undefined;
  const realSend = real.send.bind(real) as (command: unknown, ...rest: unknown[]) => Promise<unknown>;
  const send = async (command: unknown, ...rest: unknown[]): Promise<unknown> => {
    const name = (command as { constructor?: { name?: string } }).constructor?.name ?? 'command';
    if (dead !== undefined) throw new InjectedCrash(`injected crash: ${name} never sent, the process died at ${dead}`);
    let trip = false;
    if (fault.match(command)) {
      log.seen++;
      trip = log.seen >= nth && log.seen < nth + times;
    }
    const strike = async (when: 'before' | 'after') => {
      log.tripped++;
      if (fault.interleave) return fault.interleave(command);
      const message = `injected crash ${when} ${name} #${log.seen}`;
      if (dies) dead = `${name} #${log.seen}`;
      throw new InjectedCrash(message);
    };
    if (trip && phase === 'before') await strike('before');
    const out = await realSend(command, ...rest);
    if (trip && phase === 'after') await strike('after');
    return out;
  };
  const db = new Proxy(real, {
    get(target, prop) {
      if (prop === 'send') return send;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db, log };
}

/** The same deps (same table, same clock) with a faulty `db`. */
export function faultyDeps<D extends Deps>(deps: D, fault: Fault): D & { faults: FaultLog } {
  const { db, log } = faultyClient(deps.db, fault);
  return { ...deps, db, faults: log };
}

/**
 * Requests of a model test that may die part-way, each in a process of its own: `db(phase)` is
 * a new process whose every call but those `spared` dies with chance `rate` (drawn from
 * `random`, so a seeded run repeats), before the call is sent or once it has landed. A crash
 * ends that request only; `tripped` counts the crashes of all of them.
 */
export function dyingRequests(
  real: DynamoDBDocumentClient,
  options: { rate: number; random: () => number; spared: (command: unknown) => boolean },
): { db: (phase: 'before' | 'after') => DynamoDBDocumentClient; readonly tripped: number } {
  const logs: FaultLog[] = [];
  return {
    db(phase) {
      const { db, log } = faultyClient(real, { match: (c) => !options.spared(c) && options.random() < options.rate, times: Infinity, phase });
      logs.push(log);
      return db;
    },
    get tripped() {
      return logs.reduce((n, l) => n + l.tripped, 0);
    },
  };
}
