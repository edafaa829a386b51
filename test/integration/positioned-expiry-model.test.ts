/**
 * A seeded model run of expiry and counts on a positioned queue: random send requests whose
 * messages have different times to live, receives (`claimUnexpired`), completes, sweeper
 * passes, clock moves, and Lambdas dying before or after any write. Checked: no receive hands
 * out a message past its expiry (T4), none twice at one take-back count (R1); every message
 * sent ends exactly once, completed or dead-lettered for expiry (T6, D3), a message completed
 * under its lock after its expiry is not dead-lettered too (T5); a request whose sender died
 * is delivered whole or not at all (S4); and once everything is settled the count is 0 (E6).
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { jobBudget } from '../../lib/broker/budget.js';
import { claimUnexpired, sweepPositionedExpiry, type ClaimedMessage } from '../../lib/broker/positioned-expiry.js';
import { bodyTextOf } from '../../lib/messages/body.js';
import { completeAtPosition, entryOfToken } from '../../lib/store/leases.js';
import type { PositionedItem } from '../../lib/store/positions.js';
import { losingAnswers, seededRandom } from '../support/dynamo-faults.js';
import { dyingRequests, InjectedCrash, is } from '../support/faults.js';
import { positionedQueues } from '../support/positioned-seeds.js';
import { messageItems } from '../support/stream.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const TTLS = [undefined, 10 * SECOND, 40 * SECOND, 120 * SECOND];
const { clock, world, open, createQueue, seed, runtime } = positionedQueues('pos-expiry-model');

beforeAll(async () => {
  await open();
});

const nameOf = (item: object) => (JSON.parse(bodyTextOf((item as { body?: unknown }).body as never)) as { n: string }).n;

/**
 * The messages left at the partition's positions, leaving out tombstones and the messages of a
 * void request (one with a tombstone): a claim that dies after its cursor write leaves those
 * undeleted below the cursor, never delivered (positions.ts `deletePassed`).
 */
async function positionsLeft(pk: string): Promise<PositionedItem[]> {
  const out = await world.deps.db.send(
    new QueryCommand({ TableName: world.deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  const items = (out.Items ?? []) as PositionedItem[];
  const tombs = items.filter((i) => i.tomb).map((i) => Number(i.sk));
  const voided = (i: PositionedItem) => i.rf !== undefined && tombs.some((t) => t >= i.rf! && t < i.rf! + i.rn!);
  return items.filter((i) => !i.tomb && !voided(i));
}

describe('positioned expiry: the model', () => {
  it.each([
    [11, 0],
    [22, 0],
    [44, 0.15],
  ])(
    'T4, T5, T6, T7, R1, S4, D3, E6: random sends with mixed times to live, receives, completes, sweeps, clock moves and crashes (seed %i, answers lost %d)',
    { timeout: 180_000 },
    async (seedNo, lost) => {
      // Writes that land and lose their answer, the SDK sending them again (dynamo-faults.ts `retried`).
      const lossy = losingAnswers(world.deps.db, lost, seededRandom(seedNo + 1));
      const random = seededRandom(seedNo);
      const name = `model${seedNo}`;
      const entity = await createQueue(name, { deadLetteringOnMessageExpiration: true });
      const handed = new Set<string>();
      const completed = new Map<string, number>();
      const written = new Map<string, number | undefined>(); // name -> expiresAt (undefined: never)
      const unknown: string[][] = [];
      const held: ClaimedMessage[] = [];
      let pk = '';
      // Each request that may die runs in a process of its own: a dead one makes no call after.
      const crashes = dyingRequests(lossy.db, { rate: 0.1, random, spared: is(QueryCommand, GetCommand) });
      let request = 0;
      const hand = (messages: ClaimedMessage[]) => {
        for (const m of messages) {
          const expiresAt = m.item.expiresAt as number | undefined;
          expect(expiresAt === undefined || expiresAt > clock.now(), `T4: ${nameOf(m.item)} handed out expired`).toBe(true);
          const [p, g] = entryOfToken(m.token);
          expect(handed.has(`${p}@${g}`), `R1: ${p}@${g} twice`).toBe(false);
          handed.add(`${p}@${g}`);
          held.push(m);
        }
      };
      const complete = async (m: ClaimedMessage) => {
        if ((await completeAtPosition(world.deps, pk, m.token)) === 'completed') completed.set(nameOf(m.item), (completed.get(nameOf(m.item)) ?? 0) + 1);
      };
      for (let step = 0; step < 150; step++) {
        const roll = random();
        const db = random() < 0.25 ? crashes.db(random() < 0.5 ? 'before' : 'after') : lossy.db;
        const ctx = { ...world.broker.ctx, db };
        try {
          if (roll < 0.35) {
            const n = 1 + Math.floor(random() * 4);
            const messages = Array.from({ length: n }, (_, i) => {
              const ttl = TTLS[Math.floor(random() * TTLS.length)];
              return { body: { n: `r${request}-${i}` }, ...(ttl !== undefined ? { timeToLive: ttl } : {}) };
            });
            const names = messages.map((m) => m.body.n);
            request++;
            try {
              const sent = await seed(entity, messages, 0, { ...world.deps, db });
              pk = sent.pk;
              if (sent.outcome === 'written')
                messages.forEach((m) => written.set(m.body.n, m.timeToLive !== undefined ? clock.now() + m.timeToLive : undefined));
            } catch (e) {
              if (!(e instanceof InjectedCrash)) throw e;
              unknown.push(names);
            }
          } else if (roll < 0.6 && pk) {
            hand((await claimUnexpired(ctx, entity, pk, random() < 0.5 ? 1 : 5, { lockMs: LOCK })).messages);
          } else if (roll < 0.8) {
            const [m] = held.splice(Math.floor(random() * held.length), 1);
            if (m) await complete(m);
          } else if (roll < 0.85) {
            await sweepPositionedExpiry(ctx, jobBudget());
          } else clock.advance(Math.floor(random() * 30 * SECOND));
        } catch (e) {
          if (!(e instanceof InjectedCrash)) throw e;
        }
      }
      // Settle everything: what is held, then receive and complete until nothing is left.
      for (const m of held.splice(0)) await complete(m);
      for (let round = 0; round < 40; round++) {
        const got = await claimUnexpired(world.broker.ctx, entity, pk, 10, { lockMs: LOCK });
        hand(got.messages);
        for (const m of held.splice(0)) await complete(m);
        if (got.messages.length === 0) {
          if ((await positionsLeft(pk)).length === 0) break;
          clock.advance(LOCK + SECOND);
        }
      }
      expect(await positionsLeft(pk)).toEqual([]);

      const dead = (await messageItems(world.deps, name, 'deadletter')).map((d) => ({ n: nameOf(d), reason: d.deadLetterReason }));
      const deadCount = new Map<string, number>();
      for (const d of dead) {
        expect(d.reason).toBe('TTLExpiredException');
        deadCount.set(d.n, (deadCount.get(d.n) ?? 0) + 1);
      }
      // Every message ends exactly once: completed, or dead-lettered (only one that could expire).
      for (const [n, expiresAt] of written) {
        const ends = (completed.get(n) ?? 0) + (deadCount.get(n) ?? 0);
        expect(ends, `${n} ended ${ends} times`).toBe(1);
        if (deadCount.has(n)) expect(expiresAt, `${n} dead-lettered without a time to live`).toBeDefined();
      }
      for (const [n, times] of [...completed, ...deadCount]) expect(times, n).toBe(1);
      // A send that died part-way is delivered or dead-lettered whole, or not at all.
      for (const names of unknown) {
        const got = names.filter((n) => completed.has(n) || deadCount.has(n)).length;
        expect([0, names.length], names.join(',')).toContain(got);
      }
      expect(written.size).toBeGreaterThan(20);
      expect(deadCount.size).toBeGreaterThan(0);
      expect(crashes.tripped).toBeGreaterThan(0);
      expect((await runtime(name)).activeMessageCount).toBe(0);
    },
  );
});
