/**
 * Sessions (N1-N8): what accepting the next session, and the whole life of a session message,
 * cost in capacity units, and how many session messages 16 concurrent receivers get through.
 *
 * The session operations are called on the broker (lib/broker, as the API handler calls
 * them) over the environment's metered client, so the figures are the DynamoDB work of the
 * operation without the HTTP layer; sends go through the API handler as everywhere else.
 *
 * - accept next with 10,000 sessions of one message each; then again with 1,000 of those
 *   sessions locked, all of them older than the available ones (N7: not dearer, ≤ 1.2x);
 * - the life of a session message: accept next + receive + complete + release, for a
 *   session of 1 and of 10 messages (a receive of 10 and one batch complete), per message;
 *   and the sends that create those sessions (the hint on send is their extra write);
 * - what a session drained moments after its last send costs later: its release leaves the
 *   hint to be looked at again (the send's message may not have been in the index yet), and
 *   accept-next looks at it SESSION_HINT_LAG_MS after that send and at the end of the grace;
 * - throughput: 16 loops of accept next + receive + complete + release over many sessions,
 *   next to 16 loops of receive + complete on a plain queue of the same messages (both on
 *   the broker in process: the ratio is what sessions add, not what HTTP costs).
 */
import { parsePeekQuery, parseRequest } from '../../lib/requests/schemas.js';
import { createBroker, type Broker } from '../../lib/broker/index.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { BrokerError } from '../../lib/errors.js';
import { SESSION_HINT_GRACE_MS, SESSION_HINT_LAG_MS } from '../../lib/broker/message-items.js';
import { perMessage, summarizeCalls, tallyOf, type Tally } from '../capacity.js';
import { createEnv, KB_BODY, median, percentile, type BenchEnv, type OpResult } from '../harness.js';
import { measureOp } from './measure.js';

interface Received {
  sequenceNumber: string;
  lockToken: string;
}

export interface SessionCapacityResult {
  /** Sessions of one message each in the queue accept next reads. */
  sessions: number;
  /** Locked sessions older than every available one during the second measurement. */
  lockedAhead: number;
  /** acceptNextSessionWithLocked / acceptNextSession. */
  readRatio: number;
  writeRatio: number;
  requestsRatio: number;
  setupS: number;
  ops: {
    acceptNextSession: OpResult;
    acceptNextSessionWithLocked: OpResult;
    sessionLifecycle: OpResult;
    sessionLifecycle10: OpResult;
    sessionSend: OpResult;
    sessionSendBatch10: OpResult;
    sessionAfterRelease: OpResult;
  };
}

const target = (name: string): ReceiveTarget => ({ kind: 'queue', name, subqueue: 'active' });

/**
 * `perSession` 1 KB messages to each of `sessions` sessions named `${prefix}-${k}`, in batches
 * of 50 messages of 50 different sessions (the k-th message of each in the k-th pass):
 * messages of one session in one batch would each write the same session hint at once. On a
 * loaded machine a batch can run past the handler's 29 s; it is sent again (setup only: a
 * duplicate is one more message to receive).
 */
async function sendSessions(
  env: BenchEnv,
  queue: string,
  prefix: string,
  sessions: number,
  perSession: number,
  log: (line: string) => void = () => {},
): Promise<void> {
  const BATCH = 50;
  for (let pass = 0; pass < perSession; pass++) {
    const all = Array.from({ length: sessions }, (_, k) => ({ body: KB_BODY, sessionId: `${prefix}-${k}` }));
    let next = 0;
    const worker = async () => {
      for (let b = next; b < all.length; b = next) {
        next += BATCH;
        for (let attempt = 1; ; attempt++) {
          const reply = await env.api('POST', `/queues/${queue}/messages/batch`, { messages: all.slice(b, b + BATCH) }, [201, 500, 503]);
          if (reply.status === 201) break;
          if (attempt === 3) throw new Error(`${env.name}: a batch send answered ${reply.status} three times: ${JSON.stringify(reply.body).slice(0, 300)}`);
          log(`${env.name}: a batch send answered ${reply.status} after ${Math.round(reply.ms)} ms; sending it again`);
        }
      }
    };
    await Promise.all([worker(), worker()]);
  }
}

async function acceptNext(broker: Broker, queue: string) {
  return broker.acceptSession(target(queue), parseRequest('AcceptSessionRequest', {}));
}

async function receiveExactly(broker: Broker, queue: string, sessionId: string, sessionLockToken: string, n: number): Promise<Received[]> {
  const got = (await broker.receiveFromSession(
    target(queue),
    sessionId,
    parseRequest('SessionReceiveOptions', { sessionLockToken, maxMessages: n }),
  )) as unknown as Received[];
  if (got.length !== n) throw new Error(`sessions: expected ${n} messages from session ${sessionId} of ${queue}, got ${got.length}`);
  return got;
}

async function completeAll(broker: Broker, queue: string, messages: Received[]): Promise<void> {
  if (messages.length === 1)
    return broker.settle(target(queue), messages[0]!.sequenceNumber, 'complete', parseRequest('CompleteRequest', { lockToken: messages[0]!.lockToken }));
  const results = await broker.settleBatch(target(queue), 'complete', parseRequest('LockTokens', { lockTokens: messages.map((m) => m.lockToken) }));
  const failed = results.filter((r) => !('ok' in r));
  if (failed.length) throw new Error(`sessions: batch complete failed for ${failed.length} tokens: ${JSON.stringify(failed[0])}`);
}

const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? 1 : Infinity) : a / b);

/**
 * `lifeBody(n)` is the body of the n-th message of the life figures (sessionSend,
 * sessionSendBatch10, sessionLifecycle, sessionLifecycle10): the 1 KB incompressible body by
 * default, as the other per-operation figures; bench/focus.ts also measures the JSON event.
 * `lifeQueue` adds to the life queue's properties (bench/focus.ts `sessions-ttl`: a default time
 * to live, so every message of the lives carries an expiry, T5).
 */
export async function runSessionCapacity(
  endpoint: string,
  rootKey: string,
  counts = { sessions: 10_000, locked: 1_000 },
  log: (line: string) => void = () => {},
  lifeBody: (n: number) => unknown = () => KB_BODY,
  lifeQueue: Record<string, unknown> = {},
): Promise<SessionCapacityResult> {
  let sent = 0;
  const nextBody = () => lifeBody(sent++);
  // The default layout: session queues keep today's layout whatever the deployment names (only
  // queues without sessions are ticketed), so accept-next's figures are the same on any.
  const env = await createEnv({ name: 'sessions', endpoint, tableName: 'bench_sessions', rootKey });
  const broker = createBroker(env.deps);
  try {
    const started = performance.now();
    const q = 'sessions';
    await env.api('PUT', `/queues/${q}`, { requiresSession: true, lockDuration: 'PT5M' }, 201);
    await env.api('PUT', '/queues/slife', { requiresSession: true, lockDuration: 'PT5M', ...lifeQueue }, 201);
    log(`sessions: ${counts.sessions} sessions of one message`);
    await sendSessions(env, q, 'many', counts.sessions, 1, log);
    const setupMs = performance.now() - started;

    // A first accept, unmeasured: the sends took over a minute, so the once-a-minute
    // accessedAt touch would otherwise land in the first measured one.
    await acceptNext(broker, q);
    let locked = 1;
    const acceptNextSession = await measureOp(env, { reps: 5, note: `${counts.sessions} sessions of one message, none locked` }, async () => {
      await acceptNext(broker, q);
      locked++;
    });
    log(`sessions: locking ${counts.locked - locked} more (the oldest)`);
    while (locked < counts.locked) {
      await acceptNext(broker, q);
      locked++;
    }
    await broker.peek(target(q), parsePeekQuery({ maxMessages: '1' })); // the touch again, outside the figure
    const acceptNextSessionWithLocked = await measureOp(
      env,
      { reps: 5, note: `${counts.sessions} sessions of one message, the ${locked} oldest locked (by accepts before)` },
      async () => void (await acceptNext(broker, q)),
    );

    // The life of a session message, on a queue holding nothing else. A peek first, outside
    // the figures: the API handler's cached auth rule may have lapsed during the setup.
    await env.api('GET', '/queues/slife/messages?maxMessages=1', undefined, 200);
    const sessionSend = await measureOp(env, { reps: 3, note: 'a send that opens a new session (the session hint is written first)' }, async (rep) => {
      await env.api('POST', '/queues/slife/messages', { body: nextBody(), sessionId: `send-${rep}` }, 201);
    });
    const sessionSendBatch10 = await measureOp(env, { reps: 3, perMessages: 10, note: 'a batch send of 10 messages that opens a new session' }, async (rep) => {
      await env.api(
        'POST',
        '/queues/slife/messages/batch',
        { messages: Array.from({ length: 10 }, () => ({ body: nextBody(), sessionId: `batch-${rep}` })) },
        201,
      );
    });
    await drainSessions(broker, 'slife'); // the sends above leave 6 sessions behind
    const lifecycle = (size: number) =>
      measureOp(
        env,
        {
          reps: 3,
          perMessages: size,
          requestsPerRep: 4,
          prepare: async (rep) => {
            await env.api(
              'POST',
              '/queues/slife/messages/batch',
              { messages: Array.from({ length: size }, () => ({ body: nextBody(), sessionId: `life${size}-${rep}` })) },
              201,
            );
          },
          note: `accept next + receive of ${size} + ${size === 1 ? 'complete' : 'batch complete'} + release, a session of ${size} (send not included: sessionSend${size === 1 ? '' : 'Batch10'})`,
        },
        async () => {
          const s = await acceptNext(broker, 'slife');
          const got = await receiveExactly(broker, 'slife', s.sessionId, s.sessionLockToken, size);
          await completeAll(broker, 'slife', got);
          await broker.releaseSession(target('slife'), s.sessionId, parseRequest('SessionLockRequest', { sessionLockToken: s.sessionLockToken }));
        },
      );
    const sessionLifecycle = await lifecycle(1);
    const sessionLifecycle10 = await lifecycle(10);
    // Each of those releases drained its session moments after the send and left its hint to
    // be looked at again: what those looks cost is measured on its own, after they are cleared.
    await clearDrained(env, broker, 'slife');
    const sessionAfterRelease = await measureAfterRelease(env, broker, 'slife');

    const a = acceptNextSession.tally;
    const b = acceptNextSessionWithLocked.tally;
    return {
      sessions: counts.sessions,
      lockedAhead: locked,
      readRatio: ratio(b.readUnits, a.readUnits),
      writeRatio: ratio(b.writeUnits, a.writeUnits),
      requestsRatio: ratio(b.requests, a.requests),
      setupS: setupMs / 1000,
      ops: { acceptNextSession, acceptNextSessionWithLocked, sessionLifecycle, sessionLifecycle10, sessionSend, sessionSendBatch10, sessionAfterRelease },
    };
  } finally {
    env.destroy();
  }
}

/** Accept-next on `queue` finds no session (every hint it looks at is of a drained session). */
async function acceptsNothing(broker: Broker, queue: string): Promise<void> {
  try {
    await acceptNext(broker, queue);
  } catch (e) {
    if (e instanceof BrokerError && e.code === 'ServiceTimeout') return;
    throw e;
  }
  throw new Error(`sessions: accept-next on ${queue} took a session that should hold nothing`);
}

/**
 * Moves the clock past the looks a release of a drained session leaves (SESSION_HINT_LAG_MS
 * after the last send, then the end of SESSION_HINT_GRACE_MS), accepting next after each, so
 * the hints of drained sessions are gone. The last accept records the entity's use (the
 * once-a-minute touch the clock's move made due), so the next figure does not pay it.
 */
async function clearDrained(env: BenchEnv, broker: Broker, queue: string): Promise<void> {
  env.clock.advance(SESSION_HINT_LAG_MS + 1000);
  await acceptsNothing(broker, queue);
  env.clock.advance(SESSION_HINT_GRACE_MS);
  await acceptsNothing(broker, queue);
}

/**
 * A session of one message sent, received, completed and released at once (unmeasured), then
 * accept-next's two later looks at its hint (measured): the first moves it to the end of the
 * grace, the second removes the session. The entity's once-a-minute touch, due after the
 * clock's minute, is made between the two, unmeasured.
 */
async function measureAfterRelease(env: BenchEnv, broker: Broker, queue: string): Promise<OpResult> {
  const reps = 3;
  const calls: Tally['calls'] = [];
  const repTotals: OpResult['repTotals'] = [];
  const repMs: number[] = [];
  let first: Tally['calls'] | undefined;
  for (let rep = 0; rep < reps; rep++) {
    await env.api('POST', `/queues/${queue}/messages`, { body: KB_BODY, sessionId: `after-${rep}` }, 201);
    const s = await acceptNext(broker, queue);
    await completeAll(broker, queue, await receiveExactly(broker, queue, s.sessionId, s.sessionLockToken, 1));
    await broker.releaseSession(target(queue), s.sessionId, parseRequest('SessionLockRequest', { sessionLockToken: s.sessionLockToken }));
    const { tally, ms } = await env.meter.measure(async () => {
      env.clock.advance(SESSION_HINT_LAG_MS + 1000);
      await acceptsNothing(broker, queue);
      env.clock.advance(SESSION_HINT_GRACE_MS);
      env.meter.paused = true;
      try {
        await broker.peek(target(queue), parsePeekQuery({ maxMessages: '1' }));
      } finally {
        env.meter.paused = false;
      }
      await acceptsNothing(broker, queue);
    });
    calls.push(...tally.calls);
    first ??= tally.calls;
    repTotals.push({ readUnits: tally.readUnits, writeUnits: tally.writeUnits });
    repMs.push(ms / 2);
  }
  return {
    perMessages: 1,
    reps,
    tally: perMessage(tallyOf(calls), reps),
    repTotals,
    handlerMs: median(repMs),
    httpRequests: 2,
    calls: summarizeCalls(first ?? []),
    note: `a session of 1 released at once after its send: accept-next's looks ${SESSION_HINT_LAG_MS / 1000} s after the send and at the end of the ${SESSION_HINT_GRACE_MS / 1000} s grace (the message and its life not included: sessionSend, sessionLifecycle)`,
  };
}

/** Accepts, empties and releases every available session of `queue`. */
async function drainSessions(broker: Broker, queue: string): Promise<void> {
  for (;;) {
    let s;
    try {
      s = await acceptNext(broker, queue);
    } catch (e) {
      if (e instanceof BrokerError && e.code === 'ServiceTimeout') return;
      throw e;
    }
    for (;;) {
      const got = (await broker.receiveFromSession(
        target(queue),
        s.sessionId,
        parseRequest('SessionReceiveOptions', {
          sessionLockToken: s.sessionLockToken,
          maxMessages: 100,
        }),
      )) as unknown as Received[];
      if (got.length === 0) break;
      await completeAll(broker, queue, got);
    }
    await broker.releaseSession(target(queue), s.sessionId, parseRequest('SessionLockRequest', { sessionLockToken: s.sessionLockToken }));
  }
}

// ---------------------------------------------------------------------------------------------
// Throughput

export interface SessionThroughputSide {
  /** Messages received and completed per second. */
  perSecond: number;
  messages: number;
  durationS: number;
  /** Per message: DynamoDB calls, failed conditional writes (lost races, billed on AWS), units as billed. */
  dynamoCallsPerMessage: number;
  failedConditionalWritesPerMessage: number;
  writeUnitsPerMessage: number;
  readUnitsPerMessage: number;
  errors: number;
  /** Milliseconds from the start of one loop iteration to its end (a session, or a receive+complete). */
  p50Ms: number;
  p99Ms: number;
}

export interface SessionThroughputResult {
  concurrency: number;
  sessions: number;
  messagesPerSession: number;
  /** Seconds per side, in `rounds` alternating slices. */
  seconds: number;
  rounds: number;
  /** 16 loops of accept next + receive (up to messagesPerSession) + batch complete + release. */
  session: SessionThroughputSide & { sessionsPerSecond: number; emptyAccepts: number; drained: boolean };
  /** 16 loops of receive (up to messagesPerSession) + batch complete on a plain queue. */
  plain: SessionThroughputSide & { emptyReceives: number; drained: boolean };
  /** session / plain messages per second. */
  ratio: number;
  /** The first unexpected error of either side, if any (a broker bug shows up here). */
  firstError?: string;
  note: string;
}

function sideOf(tally: Tally, messages: number, durationMs: number, latencies: number[], errors: number): SessionThroughputSide {
  return {
    perSecond: messages / (durationMs / 1000),
    messages,
    durationS: durationMs / 1000,
    dynamoCallsPerMessage: messages ? tally.requests / messages : NaN,
    failedConditionalWritesPerMessage: messages ? tally.calls.filter((c) => !c.ok && c.kind === 'write').length / messages : NaN,
    writeUnitsPerMessage: messages ? tally.writeUnits / messages : NaN,
    readUnitsPerMessage: messages ? tally.readUnits / messages : NaN,
    errors,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

export async function runSessionThroughput(
  endpoint: string,
  rootKey: string,
  options: { concurrency?: number; sessions?: number; messagesPerSession?: number; seconds?: number; rounds?: number; log?: (line: string) => void } = {},
): Promise<SessionThroughputResult> {
  const concurrency = options.concurrency ?? 16;
  const sessions = options.sessions ?? 600;
  const perSession = options.messagesPerSession ?? 10;
  const seconds = options.seconds ?? 12;
  const rounds = options.rounds ?? 2;
  const log = options.log ?? (() => {});
  // The default layout: the session queue keeps today's layout, the plain queue it is compared
  // with is ticketed, as on a default deploy.
  const env = await createEnv({ name: 'session-throughput', endpoint, tableName: 'bench_session_tput', rootKey });
  const broker = createBroker(env.deps);
  try {
    await env.api('PUT', '/queues/stput', { requiresSession: true, lockDuration: 'PT5M' }, 201);
    await env.api('PUT', '/queues/ptput', { lockDuration: 'PT5M' }, 201);
    log(`session throughput: ${sessions} sessions of ${perSession} messages, and as many on a plain queue`);
    await sendSessions(env, 'stput', 'tput', sessions, perSession, log);
    for (let n = 0; n < sessions * perSession; n += 100) {
      await env.api(
        'POST',
        '/queues/ptput/messages/batch',
        { messages: Array.from({ length: Math.min(100, sessions * perSession - n) }, () => ({ body: KB_BODY })) },
        201,
      );
    }
    await broker.peek(target('stput'), parsePeekQuery({ maxMessages: '1' })); // the once-a-minute touches, outside the figures
    await broker.peek(target('ptput'), parsePeekQuery({ maxMessages: '1' }));

    let firstError: string | undefined;
    // Sessions: each loop takes a whole session at a time.
    let emptyAccepts = 0;
    let sessionMessages = 0;
    let sessionsDone = 0;
    let sessionErrors = 0;
    let sessionsDrained = false;
    const sessionLatencies: number[] = [];
    const sessionLoop = async (deadline: number) => {
      while (!sessionsDrained && performance.now() < deadline) {
        const t = performance.now();
        try {
          const s = await acceptNext(broker, 'stput');
          const got = (await broker.receiveFromSession(
            target('stput'),
            s.sessionId,
            parseRequest('SessionReceiveOptions', {
              sessionLockToken: s.sessionLockToken,
              maxMessages: perSession,
            }),
          )) as unknown as Received[];
          if (got.length) await completeAll(broker, 'stput', got);
          await broker.releaseSession(target('stput'), s.sessionId, parseRequest('SessionLockRequest', { sessionLockToken: s.sessionLockToken }));
          sessionMessages += got.length;
          sessionsDone++;
          sessionLatencies.push(performance.now() - t);
        } catch (e) {
          if (e instanceof BrokerError && e.code === 'ServiceTimeout') {
            emptyAccepts++;
            if (sessionMessages >= sessions * perSession) sessionsDrained = true;
          } else {
            sessionErrors++;
            firstError ??= `session loop: ${String(e)}`;
          }
        }
      }
    };
    // Plain queue: receive up to the same number, complete them in one batch.
    let emptyReceives = 0;
    let plainMessages = 0;
    let plainErrors = 0;
    let plainDrained = false;
    const plainLatencies: number[] = [];
    const plainLoop = async (deadline: number) => {
      while (!plainDrained && performance.now() < deadline) {
        const t = performance.now();
        try {
          const got = (await broker.receive(target('ptput'), parseRequest('ReceiveOptions', { maxMessages: perSession }))) as unknown as Received[];
          if (got.length === 0) {
            emptyReceives++;
            if (plainMessages >= sessions * perSession) plainDrained = true;
            continue;
          }
          await completeAll(broker, 'ptput', got);
          plainMessages += got.length;
          plainLatencies.push(performance.now() - t);
        } catch (e) {
          plainErrors++;
          firstError ??= `plain loop: ${String(e)}`;
        }
      }
    };
    // Alternating slices (S P P S ...), as scenario 3 does: the machine is shared, each side
    // gets the same mix of quiet and busy moments.
    const slice = seconds / rounds;
    const spent = { session: { calls: [] as Tally['calls'], ms: 0 }, plain: { calls: [] as Tally['calls'], ms: 0 } };
    const run = async (side: 'session' | 'plain') => {
      const loop = side === 'session' ? sessionLoop : plainLoop;
      const deadline = performance.now() + slice * 1000;
      const started = performance.now();
      const window = await env.meter.measure(() => Promise.all(Array.from({ length: concurrency }, () => loop(deadline))));
      spent[side].calls.push(...window.tally.calls);
      spent[side].ms += performance.now() - started;
    };
    log(`session throughput: ${concurrency} loops, ${rounds} slices of ${slice}s per side, alternating`);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? (['session', 'plain'] as const) : (['plain', 'session'] as const);
      for (const side of order) await run(side);
    }
    const s = { tally: tallyOf(spent.session.calls), ms: spent.session.ms };
    const p = { tally: tallyOf(spent.plain.calls), ms: spent.plain.ms };
    const session = {
      ...sideOf(s.tally, sessionMessages, s.ms, sessionLatencies, sessionErrors),
      sessionsPerSecond: sessionsDone / (s.ms / 1000),
      emptyAccepts,
      drained: sessionsDrained,
    };
    const plain = { ...sideOf(p.tally, plainMessages, p.ms, plainLatencies, plainErrors), emptyReceives, drained: plainDrained };
    return {
      concurrency,
      sessions,
      messagesPerSession: perSession,
      seconds,
      rounds,
      session,
      plain,
      ratio: session.perSecond / plain.perSecond,
      ...(firstError ? { firstError } : {}),
      note: 'broker functions in process on one metered client (no HTTP); latencies are per loop iteration (a whole session, or a receive + batch complete)',
    };
  } finally {
    env.destroy();
  }
}
