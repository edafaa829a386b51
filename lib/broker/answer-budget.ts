/**
 * R10: a receive or a peek takes no more than its answer can carry. The answer is the
 * handler's result as JSON, in which the messages' JSON is escaped once more as the body
 * string, and Lambda refuses an answer past LAMBDA_PAYLOAD_BYTES (API Gateway then answers
 * 502 and whatever was taken is lost or stranded). The budget counts each message handed out
 * exactly as the answer will carry it, and lets a receive take one more only while the
 * largest message that could be there still fits: the ready index does not carry a message's
 * size, and nothing may be locked or deleted that is not handed out.
 */
import { presentMessage, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import { MAX_MESSAGE_BYTES } from '../messages/schema.js';
import { LAMBDA_PAYLOAD_BYTES } from '../lambda-limits.js';

/** What one answer's messages may weigh: Lambda's limit less the envelope (status, headers, `{"messages":[...]}`) with room to spare. */
export const ANSWER_MESSAGE_BYTES = LAMBDA_PAYLOAD_BYTES - 256 * 1024;

/**
 * The most one message can add to an answer. Its S5 size counts the body and the application
 * properties as JSON text, which the answer's escaping at most doubles (`\"` becomes `\\\"`),
 * and the system properties (at most 1,672 characters by the schema) as raw text, which it can
 * grow sevenfold (a control character becomes `\\u0001`). Beside them: the dead-letter reason
 * and description (4,096 characters each, raw) and the fixed fields (times, lock token, names,
 * the dead-letter source).
 */
export const MESSAGE_ANSWER_BYTES_MAX = 2 * MAX_MESSAGE_BYTES + 6 * 2048 + 7 * 2 * 4096 + 8 * 1024;

/** Bytes a presented message takes in the answer: its JSON, escaped as part of the body string, and a comma. */
export const answerBytesOf = (message: ReceivedMessage): number => Buffer.byteLength(JSON.stringify(JSON.stringify(message)), 'utf8') - 2 + 1;

/** Room for what a lock adds to a message read before it was locked: the lock token and its time, a longer delivery count. */
const LOCK_FIELDS_BYTES = 256;

/** Bytes a message read before the write (a deferred one) will take in the answer once locked. */
export const lockedAnswerBytes = (item: MessageItem, now: number): number => answerBytesOf(presentMessage(item, now)) + LOCK_FIELDS_BYTES;

/** Counts what one answer carries. */
export class AnswerBudget {
  private used = 0;

  /** Whether a message of at most `bytes` (the largest possible one when unknown) still fits. */
  fits(bytes = MESSAGE_ANSWER_BYTES_MAX): boolean {
    return this.used + bytes <= ANSWER_MESSAGE_BYTES;
  }

  /** Counts a message handed out. */
  add(message: ReceivedMessage): void {
    this.used += answerBytesOf(message);
  }

  /** How many messages of `bytes` each, in order, fit after what is counted (none is counted). */
  countFitting(bytes: readonly number[]): number {
    let used = this.used;
    let n = 0;
    for (const b of bytes) {
      if (used + b > ANSWER_MESSAGE_BYTES) break;
      used += b;
      n++;
    }
    return n;
  }

  /** Counts the message if it fits (a peek, which knows each message before it answers); false if it did not. */
  addIfFits(message: ReceivedMessage): boolean {
    const bytes = answerBytesOf(message);
    if (!this.fits(bytes)) return false;
    this.used += bytes;
    return true;
  }
}
