/**
 * Receivers of one process in a crowd on one partition (receive.ts's crowd logic) keep out of
 * each other's way. Each reads a page of candidates and starts at a random place in it, but
 * receivers of one process (the local runtime serves many at once; on AWS a Lambda serves one)
 * can still pick the same row, or a row another of them is taking, and all but one lose the
 * race: a failed conditional write, billed. So the row a receiver goes for first is claimed,
 * in memory, for a few seconds: the others try unclaimed rows first and come to a claimed one
 * only after them. Nothing is excluded (a claim whose take failed only sorts its row later),
 * no write is added, and the conditional take still decides who gets a message. A claimed row
 * of another receiver in a page shows that the partition is being received from concurrently,
 * so it keeps the crowd's order (a lone receiver's own claims are taken rows, gone from the
 * page, and it returns to strict order).
 *
 * Real time, not the broker's clock: a guess about other requests, not a rule.
 */

/** How long a claim, and the sign of concurrent receivers it gives, lasts. */
export const CLAIM_MS = 5_000;
const MAX_CLAIMS = 10_000;

const claims = new Map<string, number>();
const busy = new Map<string, number>();

const rowId = (row: { pk: string; sk: string }) => `${row.pk}\n${row.sk}`;

/**
 * `list` (already in the order a receiver would try it) with the rows other receivers of this
 * process claimed moved after the rest, in their order; its first row claimed for this one.
 */
export function claimFirst<T extends { pk: string; sk: string }>(list: T[], now = Date.now()): T[] {
  const free: T[] = [];
  const taken: T[] = [];
  for (const row of list) {
    const at = claims.get(rowId(row));
    (at !== undefined && now - at < CLAIM_MS ? taken : free).push(row);
  }
  if (taken.length > 0) {
    if (busy.size > MAX_CLAIMS) busy.clear();
    busy.set(taken[0]!.pk, now);
  }
  const ordered = free.length === list.length ? list : [...free, ...taken];
  const first = ordered[0];
  if (first) {
    if (claims.size > MAX_CLAIMS) prune(now);
    claims.set(rowId(first), now);
  }
  return ordered;
}

/** Whether other receivers of this process were seen on partition `pk` (a message partition key) within CLAIM_MS. */
export function isBusy(pk: string, now = Date.now()): boolean {
  const at = busy.get(pk);
  return at !== undefined && now - at < CLAIM_MS;
}

function prune(now: number) {
  for (const [id, at] of claims) if (now - at >= CLAIM_MS) claims.delete(id);
  if (claims.size > MAX_CLAIMS) claims.clear();
}
