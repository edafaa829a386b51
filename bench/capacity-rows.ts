/**
 * The capacity table's rows, in the order both the console report (bench/report.ts) and
 * docs/costs.md (bench/docs.ts) show them: bench-results.json's `capacity` key, a short label
 * for the console's fixed-width table, and the label docs/costs.md prints.
 */
export interface CapacityRow {
  key: string;
  console: string;
  doc: string;
}

const row = (key: string, consoleLabel: string, doc: string): CapacityRow => ({ key, console: consoleLabel, doc });

export const capacityRows: readonly CapacityRow[] = [
  row('send', 'send 1', 'send of 1'),
  row('sendBatch10', 'batch send of 10', 'batch send of 10'),
  row('receive', 'peek-lock receive of 1', 'peek-lock receive of 1'),
  row('receive10', 'peek-lock receive of 10', 'peek-lock receive of 10'),
  row('receiveAndDelete', 'receive-and-delete of 1', 'receive-and-delete of 1'),
  row('complete', 'complete', 'complete'),
  row('completeBatch10', 'batch complete of 10', 'batch complete of 10'),
  row('abandon', 'abandon', 'abandon'),
  row('renewLock', 'renew lock', 'renew lock'),
  row('deadLetter', 'dead-letter (application)', 'dead-letter by the application'),
  row('resubmit', 'resubmit from DLQ', 'resubmit from the dead-letter subqueue'),
  row('expiryToDeadLetter', 'expiry to DLQ (sweeper run)', 'expiry into the dead-letter subqueue (sweeper)'),
  row('expiryOnReceive', 'expiry to DLQ (met by receive)', 'expiry met by a receive'),
  row('lifecycle', 'LIFECYCLE send+lock+complete', '**whole life: send, peek-lock receive, complete**'),
  row('lifecycleBatch10', 'LIFECYCLE in batches of 10', '**whole life in batches of 10**'),
  row('receiveEmpty', 'receive, empty queue', 'receive on an empty queue'),
  row('sendWithTouch', 'send, accessedAt touch due', 'send that records activity (`accessedAt`)'),
  row('sendWithTtl', 'send with timeToLive', 'send with a time to live'),
  row('receiveWithoutBacklog', 'receive 1, nothing ahead', 'receive of 1 with nothing locked or scheduled ahead'),
  row('receive10WithoutBacklog', 'receive 10, nothing ahead', 'receive of 10 with nothing ahead'),
  row('receiveWithBacklog', 'receive 1, 1k locked+1k sched.', 'receive of 1 behind 1,000 locked and 1,000 scheduled messages'),
  row('receive10WithBacklog', 'receive 10, same backlog', 'receive of 10 behind the same backlog'),
  row('partitionedReceive', 'receive 1, partitioned, full', 'receive of 1, 16 partitions, full'),
  row('partitionedReceiveOne', 'receive 1, partitioned, 1 msg', 'receive of 1, 16 partitions, one message'),
  row('partitionedReceiveEmpty', 'receive 1, partitioned, empty', 'receive of 1, 16 partitions, empty'),
  row('topicSend20', 'topic send, 20 subs, all match', 'topic send, 20 filtered subscriptions, all match'),
  row('topicSend20Filtered', 'topic send, 20 subs, 1 matches', 'topic send, 20 filtered subscriptions, one matches'),
  row('acceptNextSession', 'accept next session, 10k sessions', 'accept the next session among 10,000'),
  row('acceptNextSessionWithLocked', 'accept next, 1k locked ahead', 'accept the next session, 1,000 locked ahead'),
  row('sessionSend', 'send 1, opening a session', 'send of 1 that opens a session'),
  row('sessionSendBatch10', 'batch send of 10, one new session', 'batch send of 10 into one new session'),
  row('sessionLifecycle', 'SESSION accept+recv+compl+release', 'a session of 1: accept, receive, complete, release'),
  row('sessionLifecycle10', 'SESSION of 10, same (batch compl.)', 'a session of 10: the same, batch complete'),
  row('sessionAfterRelease', 'SESSION drained at once, later looks', "a session of 1 released at once after its send: accept-next's later looks at it"),
  row('sweeperIdle', 'sweeper run, empty table', 'a sweeper run with nothing to do'),
  row('reaperIdle', 'reaper run, empty table', 'a reaper run with nothing to do'),
];

/** The console label of `key`, or the key itself when it has no row. */
export const consoleLabel = (key: string): string => capacityRows.find((r) => r.key === key)?.console ?? key;
