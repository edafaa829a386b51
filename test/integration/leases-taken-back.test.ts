/**
 * The cursor's `tb` (leases taken back lately) kept for minutes, not a day (lib/store/leases.ts
 * `TAKEN_BACK_KEEP_MS`): every way a taken-back lease could be seen again after its take-back
 * (a late repair, the claimer's own late lease write, a stale read of the lapsed leases, a
 * delete that never landed) still finds it in `tb`, or finds it never written, so no message is
 * taken back twice and handed out under two locks (R6, R1); and many lapses keep the cursor small.
 */
import { DeleteCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  claim,
  completeAtPosition,
  entryOfToken,
  forgetRememberedLeases,
  readCursor,
  readLeases,
  TAKEN_BACK_KEEP_MS,
  type Claim,
  type LeaseItem,
} from '../../lib/store/leases.js';
import { cursorKey } from '../../lib/store/keys.js';
import type { PositionStore } from '../../lib/store/positions.js';
import { positionedPartitions, sendAtPositions, type Deps } from '../support/positioned-partitions.js';
import { both, faultyDeps, inputOf, InjectedCrash, is } from '../support/faults.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const LOCK = 30 * SECOND;
const { clock, open, newPartition } = positionedPartitions();
let deps: Deps;

beforeAll(async () => {
  deps = await open('leases-tb');
});

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);
const leasePut = both(is(PutCommand), onPrefix('lease/'));
/** The repair's write of a lease, as a transaction (now) or a lone Put (before). */
const repairWrite = (c: unknown) => is(TransactWriteCommand)(c) || leasePut(c);

/** Every hand-out: no position at one take-back count twice (R1, R6). */
class Ledger {
  readonly handed = new Set<string>();
  note(c: Claim) {
    for (const m of c.messages) {
      const [p, g] = entryOfToken(m.token);
      expect(this.handed.has(`${p}@${g}`), `position ${p} handed out twice at take-back count ${g}`).toBe(false);
      this.handed.add(`${p}@${g}`);
    }
    return c;
  }
}

/** A message of its own, claimed by a receiver that died before writing its lease: only the cursor's record holds it. */
async function heldByRecordOnly(pk: string, ledger: Ledger) {
  await sendAtPositions(deps, pk, ['m']);
  const dying = faultyDeps(deps, { match: leasePut });
  await expect(claim(dying, pk, 1, { lockMs: LOCK })).rejects.toThrow(InjectedCrash);
  for (const h of ['1@0']) ledger.handed.add(h);
  expect(await readLeases(deps, pk)).toEqual([]);
}

const bodiesOf = (c: Claim) => c.messages.map((m) => m.item.b as string);

async function leaseIds(pk: string): Promise<number[]> {
  return (await readLeases(deps, pk)).map((l) => l.id);
}

describe('leases: a taken-back lease seen again', () => {
  it('R6, D3: a repair that lands after the take-back (and after `tb` forgot it) writes nothing, so the message is not handed out twice', async () => {
    const pk = newPartition();
    const ledger = new Ledger();
    await heldByRecordOnly(pk, ledger);
    const lapsedId = (await readCursor(deps, pk)).claim!.id;
    clock.advance(LOCK);
    let holder: Claim | undefined;
    // A repairer reads the cursor and finds the lease missing; before its write lands, the
    // world moves on: another receiver repairs it and, the lease lapsed, takes it back at once
    // (leaving the message in line), a day passes, and a third claims the message again under
    // a lock still valid.
    const slow = faultyDeps(deps, {
      match: repairWrite,
      interleave: async () => {
        const repairing = faultyDeps(deps, { match: repairWrite, phase: 'after', afterwards: 'lives', interleave: async () => {} });
        ledger.note(await claim(repairing, pk, 1, { lockMs: LOCK, fits: () => 0 })); // repairs, takes it back, takes nothing
        expect(repairing.faults.tripped).toBe(1);
        expect(await leaseIds(pk)).toEqual([]);
        expect((await readCursor(deps, pk)).tb?.map(([id]) => id)).toContain(lapsedId);
        clock.advance(25 * HOUR);
        holder = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
        expect(holder.messages.map((m) => entryOfToken(m.token))).toEqual([[1, 1]]);
      },
    });
    ledger.note(await claim(slow, pk, 1, { lockMs: LOCK }));
    expect(slow.faults.tripped).toBe(1);
    // The late repair wrote nothing: the lapsed lease is gone for good.
    expect(await leaseIds(pk)).toEqual([holder!.lease!.id]);
    ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    // The holder's lock is still valid, and its complete still succeeds.
    expect(await completeAtPosition(deps, pk, holder!.messages[0]!.token)).toBe('completed');
  });

  it('R6, D3: a claimer whose lock ends before it writes its lease sends no lease write; the next claim repairs it, and it comes back once', async () => {
    const pk = newPartition();
    const ledger = new Ledger();
    await sendAtPositions(deps, pk, ['m']);
    // The claimer stalls between its cursor write and its lease write past its lock's end.
    const stalled = faultyDeps(deps, {
      match: both(is(PutCommand), onPrefix('cursor/')),
      phase: 'after',
      interleave: async () => {
        clock.advance(LOCK + SECOND);
      },
    });
    let leaseWrites = 0;
    const counting = faultyDeps(stalled, {
      match: (c) => {
        if (leasePut(c)) leaseWrites++;
        return false;
      },
    });
    ledger.note(await claim(counting, pk, 1, { lockMs: LOCK }));
    expect(leaseWrites).toBe(0);
    expect(await readLeases(deps, pk)).toEqual([]);
    // The next claim repairs it from the record (lapsed already), takes it back and claims it (R2: receivable now).
    const again = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    expect(again.messages.map((m) => [entryOfToken(m.token), m.deliveryCount])).toEqual([[[1, 1], 2]]);
    expect((await claim(deps, pk, 1, { lockMs: LOCK })).messages).toEqual([]);
  });

  it("R6: the claimer's own lease write landing after the take-back (within a function timeout) finds it in `tb`: deleted, not taken back again", async () => {
    const pk = newPartition();
    const ledger = new Ledger();
    await sendAtPositions(deps, pk, ['m']);
    let holder: Claim | undefined;
    // The lease write is on its way; meanwhile the lock ends, and another receiver repairs it,
    // takes it back and claims the message again (a lock of 10 minutes).
    const slow = faultyDeps(deps, {
      match: leasePut,
      interleave: async () => {
        clock.advance(LOCK);
        holder = ledger.note(await claim(deps, pk, 1, { lockMs: 10 * MINUTE }));
        expect(holder.messages.map((m) => entryOfToken(m.token))).toEqual([[1, 1]]);
      },
    });
    const first = ledger.note(await claim(slow, pk, 1, { lockMs: LOCK }));
    expect(slow.faults.tripped).toBe(1);
    // It landed: the taken-back lease is back, lapsed.
    expect(await leaseIds(pk)).toContain(first.lease!.id);
    clock.advance(5 * MINUTE);
    ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    expect(await leaseIds(pk)).toEqual([holder!.lease!.id]);
    expect(await completeAtPosition(deps, pk, holder!.messages[0]!.token)).toBe('completed');
  });

  it('R6: a stale read of the lapsed leases showing a deleted, taken-back lease does not take it back again; past the keep, a consistent read drops it', async () => {
    const pk = newPartition();
    const ledger = new Ledger();
    await sendAtPositions(deps, pk, ['m']);
    const first = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    const deleted = (await readLeases(deps, pk))[0]!;
    clock.advance(LOCK);
    const holder = ledger.note(await claim(deps, pk, 1, { lockMs: HOUR }));
    expect(holder.messages.map((m) => entryOfToken(m.token))).toEqual([[1, 1]]);
    expect(await leaseIds(pk)).toEqual([holder.lease!.id]);
    // A replica behind: every eventually consistent read of the leases still shows the deleted one.
    let staleReads = 0;
    const stale: PositionStore = {
      ...deps,
      db: new Proxy(deps.db, {
        get(target, prop) {
          if (prop !== 'send') return Reflect.get(target, prop, target) as unknown;
          return async (command: unknown) => {
            const out = (await target.send(command as QueryCommand)) as { Items?: LeaseItem[] };
            const input = inputOf(command);
            if (command instanceof QueryCommand && !input.ConsistentRead && String(input.ExpressionAttributeValues?.[':pk']).startsWith('lease/')) {
              staleReads++;
              return { ...out, Items: [deleted, ...(out.Items ?? []).filter((l) => l.id !== deleted.id)] };
            }
            return out;
          };
        },
      }),
    } as PositionStore;
    for (const step of [SECOND, 4 * MINUTE, 4 * MINUTE]) {
      clock.advance(step);
      ledger.note(await claim(stale, pk, 1, { lockMs: LOCK }));
    }
    expect(staleReads).toBeGreaterThanOrEqual(3);
    expect((await readCursor(deps, pk)).tb?.map(([id]) => id)).toEqual([first.lease!.id]);
    clock.advance(2 * MINUTE);
    // A claim that writes the cursor (a new message) past the keep reads the leases consistently: gone, forgotten.
    await sendAtPositions(deps, pk, ['n']);
    expect(bodiesOf(ledger.note(await claim(stale, pk, 1, { lockMs: LOCK })))).toEqual(['n']);
    expect((await readCursor(deps, pk)).tb ?? []).toEqual([]);
    expect(await completeAtPosition(deps, pk, holder.messages[0]!.token)).toBe('completed');
  });

  it("R6, D3: a taken-back lease whose deletes never landed stays in `tb` past the keep, until a claim's consistent read sees it gone", async () => {
    const pk = newPartition();
    const ledger = new Ledger();
    await sendAtPositions(deps, pk, ['m']);
    const first = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    clock.advance(LOCK);
    // Every delete of a lease is refused (a crash before it) for the next three claims.
    const noDelete = () => faultyDeps(deps, { match: both(is(DeleteCommand), onPrefix('lease/')) });
    // A take-back that leaves the message in line, then a claim of it under a lock of an hour.
    await expect(claim(noDelete(), pk, 1, { lockMs: LOCK, fits: () => 0 })).rejects.toThrow(InjectedCrash);
    await expect(claim(noDelete(), pk, 1, { lockMs: HOUR })).rejects.toThrow(InjectedCrash);
    ledger.handed.add('1@1');
    const cursor = await readCursor(deps, pk);
    expect(cursor.claim?.e).toEqual([[1, 1]]);
    expect(cursor.tb?.map(([id]) => id)).toEqual([first.lease!.id]);
    // Past the keep, a claim that writes the cursor (a new message) sees the lease still there: it stays in `tb`.
    clock.advance(TAKEN_BACK_KEEP_MS + MINUTE);
    await sendAtPositions(deps, pk, ['n']);
    await expect(claim(noDelete(), pk, 1, { lockMs: HOUR })).rejects.toThrow(InjectedCrash);
    ledger.handed.add('2@0');
    expect((await readCursor(deps, pk)).tb?.map(([id]) => id)).toEqual([first.lease!.id]);
    expect(await leaseIds(pk)).toContain(first.lease!.id);
    // The next claim finds it in `tb`: only deleted, the message not handed out again.
    ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(await leaseIds(pk)).not.toContain(first.lease!.id);
    // Gone: the next cursor write forgets it.
    await sendAtPositions(deps, pk, ['o']);
    expect(bodiesOf(ledger.note(await claim(deps, pk, 10, { lockMs: LOCK })))).toEqual(['o']);
    expect((await readCursor(deps, pk)).tb ?? []).toEqual([]);
  });
});

describe('leases: an idle partition after a take-back', () => {
  it.each([
    ['in the process that last wrote the cursor, reading the lapsed leases once, consistently', false, ['consistent', 'cursor write', 'eventual']],
    ['in a process that never saw the cursor, reading them again, consistently', true, ['eventual', 'consistent', 'cursor write', 'eventual']],
  ])(
    'R6: the first empty claim past the keep drops the take-back by one cursor write, %s; the polls after it read the lapsed leases as before',
    async (_, elsewhere, calls) => {
      const pk = newPartition();
      await sendAtPositions(deps, pk, ['m']);
      await claim(deps, pk, 1, { lockMs: LOCK });
      clock.advance(LOCK);
      const again = await claim(deps, pk, 1, { lockMs: LOCK });
      expect(await completeAtPosition(deps, pk, again.messages[0]!.token)).toBe('completed');
      clock.advance(TAKEN_BACK_KEEP_MS + MINUTE);
      if (elsewhere) forgetRememberedLeases();
      const seen: string[] = [];
      const watching = faultyDeps(deps, {
        match: (c) => {
          const input = inputOf(c);
          if (c instanceof QueryCommand && String(input.ExpressionAttributeValues?.[':pk']).startsWith('lease/'))
            seen.push(input.ConsistentRead ? 'consistent' : 'eventual');
          if (is(PutCommand)(c) && onPrefix('cursor/')(c)) seen.push('cursor write');
          return false;
        },
      });
      expect((await claim(watching, pk, 1, { lockMs: LOCK })).messages).toEqual([]);
      expect((await readCursor(deps, pk)).tb ?? []).toEqual([]);
      expect((await claim(watching, pk, 1, { lockMs: LOCK })).messages).toEqual([]);
      expect(seen).toEqual(calls);
    },
  );
});

describe('leases: many lapses keep the cursor small', () => {
  it('R6: 200 lapses over a day leave a cursor of a few hundred bytes (its `tb` holds the last minutes only)', async () => {
    const pk = newPartition();
    const ledger = new Ledger();
    const step = (24 * HOUR) / 200;
    let lapses = 0;
    let largest = 0;
    for (let i = 0; i < 200; i++) {
      await sendAtPositions(deps, pk, [`m${i}`]);
      const c = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
      // A message seen the second time is completed; a new one lapses once.
      for (const m of c.messages) if (entryOfToken(m.token)[1] > 0 && (await completeAtPosition(deps, pk, m.token)) === 'completed') lapses++;
      const raw = await deps.db.send(
        new QueryCommand({
          TableName: deps.tableName,
          KeyConditionExpression: 'pk = :pk AND sk = :sk',
          ExpressionAttributeValues: { ':pk': cursorKey(pk).pk, ':sk': cursorKey(pk).sk },
          ConsistentRead: true,
        }),
      );
      largest = Math.max(largest, JSON.stringify(raw.Items?.[0] ?? {}).length);
      clock.advance(step);
    }
    expect(lapses).toBe(199);
    const cursor = await readCursor(deps, pk);
    expect((cursor.tb ?? []).length).toBeLessThanOrEqual(Math.ceil(TAKEN_BACK_KEEP_MS / step) + 1);
    expect(largest).toBeLessThan(600);
  });
});
