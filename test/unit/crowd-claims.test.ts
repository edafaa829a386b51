/**
 * Receivers of one process in a crowd (lib/broker/crowd-claims.ts): the row one goes for first
 * is claimed for a few seconds, the others try unclaimed rows first. Only an order: every row
 * stays a candidate, and the conditional take decides who gets a message (R1).
 */
import { describe, expect, it } from 'vitest';
import { CLAIM_MS, claimFirst, isBusy } from '../../lib/broker/crowd-claims.js';

let n = 0;
/** Rows of a partition of its own, so tests share no claims. */
const page = (count: number) => {
  const pk = `msg/claims-${++n}/a/0`;
  return Array.from({ length: count }, (_, i) => ({ pk, sk: String(i).padStart(19, '0') }));
};
const sks = (rows: { sk: string }[]) => rows.map((r) => Number(r.sk));

describe('crowd claims', () => {
  it('R1: a receiver gets its page in its own order, and claims its first row', () => {
    const rows = page(4);
    expect(sks(claimFirst(rows, 1_000))).toEqual([0, 1, 2, 3]);
    expect(isBusy(rows[0]!.pk, 1_000)).toBe(false);
  });

  it('R1: the rows other receivers went for come after the rest, still in the page; seeing them marks the partition busy', () => {
    const rows = page(4);
    claimFirst(rows, 1_000); // another receiver went for row 0
    claimFirst([rows[2]!, rows[3]!], 1_001); // and another for row 2

    expect(sks(claimFirst(rows, 1_002))).toEqual([1, 3, 0, 2]);
    expect(isBusy(rows[0]!.pk, 1_002)).toBe(true);
    // The next one does not go for row 1 either.
    expect(sks(claimFirst(rows, 1_003))).toEqual([3, 0, 1, 2]);
  });

  it('R1: when every row is claimed the page keeps its order: a claim excludes nothing', () => {
    const rows = page(2);
    claimFirst(rows, 1_000);
    claimFirst([rows[1]!], 1_000);
    expect(sks(claimFirst(rows, 1_001))).toEqual([0, 1]);
  });

  it(`R2: claims and the partition's busy sign last ${CLAIM_MS} ms; a lone receiver, whose claimed rows are gone from its pages, is never busy`, () => {
    const rows = page(3);
    claimFirst(rows, 1_000);
    expect(sks(claimFirst(rows, 1_000 + CLAIM_MS))).toEqual([0, 1, 2]);
    expect(isBusy(rows[0]!.pk, 1_000 + CLAIM_MS)).toBe(false);

    const lone = page(3);
    claimFirst(lone, 10_000); // took row 0
    claimFirst(lone.slice(1), 10_100); // its next page no longer holds it: took row 1
    expect(sks(claimFirst(lone.slice(2), 10_200))).toEqual([2]);
    expect(isBusy(lone[0]!.pk, 10_200)).toBe(false);
  });
});
