/**
 * S1, S4 for a request stored in more than one write: a fan-out too large for one transaction
 * (100 items, 4 MB) puts its copies side by side, then its duplicate marker (S7) or a topic's
 * cancel record (S6). While nothing has landed, a failure answers as the store refused, and
 * nothing is stored. Once one write landed, or may have, the message may be stored, and no
 * answer may say it was not, in a batch least of all: `mayBeStored`, a retryable 500, so the
 * sender sends it again (a second copy where the first was stored, never a lost one).
 */
import { mayBeStored, saysMayBeStored } from '../errors.js';
import { mayHaveLanded } from '../store/outcomes.js';
import { writeAgain } from '../store/read-back.js';
import type { BrokerContext } from './context.js';

/**
 * Runs `writes` side by side and answers what each resolved to. `landed` says whether a resolved
 * write stored anything (a put at drawn positions can resolve to "try again", nothing written).
 * Throws the first failure when nothing landed; `mayBeStored` when something did and another
 * write failed or stored nothing.
 */
export async function writeApart<T>(writes: readonly (() => Promise<T>)[], landed: (value: T) => boolean = () => true): Promise<T[]> {
  const settled = await Promise.allSettled(writes.map((write) => write()));
  const failures = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
  const values = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stored = values.filter(landed);
  if (stored.length === values.length && failures.length === 0) return values;
  const someLanded = stored.length > 0 || failures.some((e) => mayHaveLanded(e) || saysMayBeStored(e));
  if (someLanded) throw mayBeStored('some of its copies could not be written');
  if (failures.length > 0) throw failures[0];
  return values;
}

/**
 * A record that follows the copies it is about (an unconditional put, so asking again is
 * harmless): asked again while the store refuses it for load or loses its answer. Not written,
 * the copies stay stored, so the send is answered `mayBeStored`, not refused.
 */
export async function writeAfterCopies(ctx: BrokerContext, what: string, write: () => Promise<unknown>): Promise<void> {
  if (!(await writeAgain(ctx, write))) throw mayBeStored(`its ${what} could not be written`);
}
