/**
 * A transaction whose outcome the caller must know even when every answer is lost: a take that
 * hands out what it removed (R10) cannot answer "not taken" for a message its delete removed.
 */
import { randomUUID } from 'node:crypto';
import { TransactWriteCommand, type TransactWriteCommandInput, type TransactWriteCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { backoff, type Backoff } from '../backoff.js';
import { isStoreBusy, mayHaveLanded } from './outcomes.js';

/** Sends after the SDK's own attempts, when each of them may have landed. */
export const TOKEN_RESENDS = 5;
const RESEND_BACKOFF: Backoff = { baseMs: 100, capMs: 1_000 };

/**
 * Sends `items` as one TransactWriteItems under a ClientRequestToken of its own, and sends it
 * again under the same token, up to `TOKEN_RESENDS` times, while the failure may have come after
 * it landed (`mayHaveLanded`: a 500, a timeout, the SDK's retry quota spent). DynamoDB answers a
 * token it has seen within 10 minutes with the first outcome and applies nothing twice, so a
 * resend turns "maybe" into an answer: success when the first landed, or this send's own outcome
 * when it did not. The SDK repeats the token within its own retries too; this carries it across
 * calls. A resend that meets the first still being applied is refused before anything is
 * applied (TransactionInProgressException, which the SDK retries as throttling), but the first
 * may yet land: that refusal is no answer either, and the token is sent again; so is a resend
 * refused for load or a conflict. Success: the transaction is applied, once. Failure: DynamoDB's
 * refusal as it came (read it with outcomes.ts), or, past the resends, the first error that
 * left the transaction's fate unknown (`mayHaveLanded` reads it so).
 */
export async function transactOnce(ctx: Pick<Deps, 'db' | 'clock'>, items: TransactWriteCommandInput['TransactItems']): Promise<TransactWriteCommandOutput> {
  const token = randomUUID();
  /** The first failure that may have come after the transaction landed: from then on only the token's own answer ends the resends. */
  let unsure: unknown;
  for (let resend = 0; ; resend++) {
    try {
      return await ctx.db.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token }));
    } catch (e) {
      if (mayHaveLanded(e)) unsure ??= e;
      // A resend refused for load or a conflict applied nothing, and says nothing of the first.
      if (!(mayHaveLanded(e) || stillInProgress(e) || (unsure !== undefined && isStoreBusy(e)))) throw e;
      if (resend >= TOKEN_RESENDS) throw unsure ?? e;
      await backoff(ctx.clock, resend, RESEND_BACKOFF);
    }
  }
}

/** A call under a token whose transaction DynamoDB is still applying: its outcome is still to come. */
const stillInProgress = (e: unknown): boolean => e instanceof Error && e.name === 'TransactionInProgressException';
