/**
 * A4: no key passes through a log. The api logs unhandled errors, and an SDK error may
 * carry the whole item it concerned (a ConditionalCheckFailedException's `Item`); in the
 * key partition that item holds the keys. Here a write of a rule fails with such an error.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiClient } from '../support/api.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { ManualClock, testDeps } from '../support/table.js';
import { AUTH_PK } from '../../lib/store/keys.js';

const clock = new ManualClock();
let deps: Awaited<ReturnType<typeof testDeps>>;

beforeAll(async () => {
  deps = await testDeps(clock, 'log-keys');
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Everything written to stdout and stderr while `act` runs. */
async function captured(act: () => Promise<unknown>): Promise<string> {
  const lines: string[] = [];
  const keep = (chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  const logged = vi.spyOn(console, 'error').mockImplementation((...args) => void lines.push(args.map(String).join(' ')));
  try {
    await act();
  } finally {
    vi.restoreAllMocks();
  }
  void logged;
  return lines.join('\n');
}

describe('A4: keys never reach a log', () => {
  it('logs an unhandled error on a rule write without the item the error carries', async () => {
    // prepare: the write of the rule "lands", then fails with an error that carries the item
    let written: { primaryKey: string; secondaryKey: string } | undefined;
    const faulty = faultyDeps(deps, {
      match: both(is(PutCommand), (c) => inputOf(c).Item?.pk === AUTH_PK && String(inputOf(c).Item?.sk).endsWith('|sender')),
      phase: 'after',
      interleave: async (command) => {
        written = inputOf(command).Item;
        throw Object.assign(new Error('Internal server error'), {
          name: 'InternalServerError',
          $metadata: { httpStatusCode: 500, requestId: 'R1' },
          Item: inputOf(command).Item,
        });
      },
    });
    const api = apiClient(faulty);

    // act
    let status = 0;
    const output = await captured(async () => {
      status = (await api('PUT', '/authorization-rules/sender', { rights: ['Send'] })).status;
    });

    // assess: the failure was logged, the keys were not
    expect(status).toBe(500);
    expect(written?.primaryKey).toBeTruthy();
    expect(output).toContain('InternalServerError');
    expect(output).toContain('R1');
    expect(output).not.toContain(written!.primaryKey);
    expect(output).not.toContain(written!.secondaryKey);
  });
});
