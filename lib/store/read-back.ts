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
import { isStoreBusy, mayHaveLanded } from './outcomes.js';

const READ_BACK_CALLS = 4;

/** The read's answer, or `UNREAD` when every call was refused for load or one failed otherwise. */
export const readBack = <T>(ctx: { clock: Pick<Clock, 'sleep'> }, read: () => Promise<T>): Promise<T | typeof UNREAD> => askAgain(ctx, read, isStoreBusy);

/**
 * The same for a write that repeats harmlessly (a put with no condition, or one that knows its
 * own landed item), made after other writes of its request landed: a marker or record that
 * must follow the messages it is about. Asked again while the store refuses it for load or
 * loses its answer, as a read-back is; false when it still has not been answered, and whether it
 * landed is not known.
 */
export async function writeAgain(ctx: { clock: Pick<Clock, 'sleep'> }, write: () => Promise<unknown>): Promise<boolean> {
  return (await askAgain(ctx, write, (e) => isStoreBusy(e) || mayHaveLanded(e))) !== UNREAD;
}

async function askAgain<T>(ctx: { clock: Pick<Clock, 'sleep'> }, call: () => Promise<T>, again: (e: unknown) => boolean): Promise<T | typeof UNREAD> {
  for (let n = 1; ; n++) {
    try {
      return await call();
    } catch (e) {
      if (!again(e) || n >= READ_BACK_CALLS) return UNREAD;
      await backoff(ctx.clock, n - 1, UNPROCESSED_BACKOFF);
    }
  }
}

/** A read-back that got no answer: whether the write landed is not known. */
export const UNREAD = Symbol('unread');
