/**
 * The read after a write that may have landed (outcomes.ts `mayHaveLanded`: a 500 or no answer
 * at some attempt), which decides whether it did. The store refusing that read for load is
 * brief, and a read changes nothing, so a refused read is asked again: READ_BACK_CALLS calls at
 * most (each with the SDK's own attempts), the shared backoff on the broker clock between. A
 * read left unanswered leaves the write's outcome unknown, and the caller's failure stands;
 * where a landed write would otherwise go unseen (a receive-and-delete's delete, a take), each
 * refusal more is a message more that nobody is handed.
 */
import { backoff, UNPROCESSED_BACKOFF } from '../backoff.js';
import type { Clock } from '../clock.js';
import { isStoreBusy } from './outcomes.js';

const READ_BACK_CALLS = 4;

/** The read's answer, or `UNREAD` when every call was refused for load or one failed otherwise. */
export async function readBack<T>(ctx: { clock: Pick<Clock, 'sleep'> }, read: () => Promise<T>): Promise<T | typeof UNREAD> {
  for (let call = 1; ; call++) {
    try {
      return await read();
    } catch (e) {
      if (!isStoreBusy(e) || call >= READ_BACK_CALLS) return UNREAD;
      await backoff(ctx.clock, call - 1, UNPROCESSED_BACKOFF);
    }
  }
}

/** A read-back that got no answer: whether the write landed is not known. */
export const UNREAD = Symbol('unread');
