/**
 * R10's answer budget: the bound on what one message adds to an answer holds for the worst
 * message S5 and the schema allow, and a budget never lets an answer pass Lambda's limit.
 */
import { describe, expect, it } from 'vitest';
import { AnswerBudget, answerBytesOf, MESSAGE_ANSWER_BYTES_MAX } from '../../lib/broker/answer-budget.js';
import { presentMessage, type MessageItem } from '../../lib/messages/item.js';
import { checkSize, MAX_MESSAGE_BYTES, type MessageInput } from '../../lib/messages/schema.js';
import { LAMBDA_PAYLOAD_BYTES, payloadBytes } from '../../lib/lambda-limits.js';

const control = (n: number) => '\u0001'.repeat(n);

/** A message of S5's full size that the answer's escaping grows the most, locked and dead-lettered. */
function worstItem(): MessageItem {
  const system = {
    contentType: control(256),
    messageId: control(128),
    correlationId: control(128),
    sessionId: 's'.repeat(128),
    replyTo: control(260),
    replyToSessionId: control(128),
    subject: control(256),
    to: control(260),
    partitionKey: control(128),
  };
  const applicationProperties = { q: '"'.repeat(10_000) };
  const probe = checkSize({ ...system, applicationProperties, body: '' } as MessageInput);
  // Each `"` is two bytes of the body's JSON text; fill what S5 leaves.
  const body = '"'.repeat(Math.floor((MAX_MESSAGE_BYTES - probe.size) / 2));
  const { size, body: text } = checkSize({ ...system, applicationProperties, body } as MessageInput);
  expect(size).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
  expect(size).toBeGreaterThan(MAX_MESSAGE_BYTES - 4);
  return {
    pk: 'msg/e/deadletter/0',
    sk: '00000000000000000001',
    seq: '9223372036854775807',
    eid: 'e',
    entity: 'queues/q',
    subqueue: 'deadletter',
    partition: 0,
    ...system,
    body: text,
    props: JSON.stringify(applicationProperties),
    timeToLive: 10 * 365 * 24 * 3600 * 1000,
    enqueuedAt: Date.UTC(2030, 0, 1),
    expiresAt: Date.UTC(2040, 0, 1),
    state: 'Scheduled',
    deliveryCount: 2_147_483_647,
    lockToken: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
    lockedUntil: Date.UTC(2030, 0, 1),
    deadLetterReason: control(4096),
    deadLetterErrorDescription: control(4096),
    deadLetterSource: `topics/${'t'.repeat(260)}/subscriptions/${'s'.repeat(260)}`,
    enqueuedSequenceNumber: '9223372036854775807',
    size,
  };
}

describe('R10: the answer budget', () => {
  it('R10: the largest a message can weigh in an answer is within MESSAGE_ANSWER_BYTES_MAX', () => {
    const message = presentMessage(worstItem(), Date.UTC(2029, 0, 1), { lock: true });
    const bytes = answerBytesOf(message);
    expect(bytes).toBeGreaterThan(2 * MAX_MESSAGE_BYTES);
    expect(bytes).toBeLessThanOrEqual(MESSAGE_ANSWER_BYTES_MAX);
  });

  it("R10: a receive's answer of worst messages, taken while the largest still fits, stays within Lambda's limit", () => {
    const message = presentMessage(worstItem(), Date.UTC(2029, 0, 1), { lock: true });
    const budget = new AnswerBudget();
    const messages = [];
    while (budget.fits()) {
      messages.push(message);
      budget.add(message);
    }
    expect(messages.length).toBeGreaterThan(5);
    const answer = { statusCode: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify({ messages }) };
    expect(payloadBytes(answer)).toBeLessThanOrEqual(LAMBDA_PAYLOAD_BYTES);
  });
});
