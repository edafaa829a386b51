/**
 * Key formats of the single table. Names in keys are lower-cased (E1: case-insensitive);
 * '/' cannot appear in a name, so it separates parts. Messages are keyed by the entity's
 * incarnation id (eid), not its name: deleting an entity makes all its messages unreachable
 * at once (E4), even if an entity of the same name is created again; the reaper removes them.
 */
import type { EntityKind, Subqueue } from '../entities/kinds.js';
import { nameKey } from '../names.js';

export const subqueueSegment: Record<Subqueue, string> = { active: 'a', deadletter: 'dlq', transfer: 'tdlq' };

export const SEQ_DIGITS = 19;
export const padSeq = (seq: bigint | string) => seq.toString().padStart(SEQ_DIGITS, '0');
export const TIME_DIGITS = 15;
export const padTime = (ms: number) => Math.max(0, Math.floor(ms)).toString().padStart(TIME_DIGITS, '0');

export interface Key {
  pk: string;
  sk: string;
}

/** An item's key as one string, to find it in a Map or a Set (no key part holds a newline). */
export const keyId = (key: Key) => `${key.pk}\n${key.sk}`;

export const QUEUES_PK = 'queues';
export const TOPICS_PK = 'topics';
/** A topic's own partition: its subscriptions (`sub/<name>`) and their filter rules (`rule/<subscription>/<name>`). */
export const TOPIC_PK_PREFIX = 'topic/';
export const topicPartitionPk = (topic: string) => `${TOPIC_PK_PREFIX}${nameKey(topic)}`;
export const SUBSCRIPTION_SK_PREFIX = 'sub/';
export const RULE_SK_PREFIX = 'rule/';

export function entityKey(kind: EntityKind, name: string, topic?: string): Key {
  switch (kind) {
    case 'queue':
      return { pk: QUEUES_PK, sk: nameKey(name) };
    case 'topic':
      return { pk: TOPICS_PK, sk: nameKey(name) };
    case 'subscription':
      return { pk: topicPartitionPk(topic ?? ''), sk: `${SUBSCRIPTION_SK_PREFIX}${nameKey(name)}` };
  }
}

/** The name of the subscription an item of a topic's partition belongs to (a subscription, or one of its rules). */
export const subscriptionOfSk = (sk: string) => sk.split('/')[1]!;

/** The sort-key prefix of one subscription's filter rules (`ruleKey` with an empty rule name). */
export const subscriptionRulesPrefix = (subscription: string) => `${RULE_SK_PREFIX}${nameKey(subscription)}/`;

export const ruleKey = (topic: string, subscription: string, rule: string): Key => ({
  pk: topicPartitionPk(topic),
  sk: `${subscriptionRulesPrefix(subscription)}${nameKey(rule)}`,
});

/**
 * The partition of the authorization rules, whose items hold the keys (A2), in the keys
 * table (table.ts `keysTableDefinition`); older deployments kept it in the data table, and
 * the bootstrap moves it. Only the api, notify and the bootstrap may read it
 * (infra/constructs/access.ts).
 */
export const AUTH_PK = 'auth';
/** An authorization rule's key: its scope, then its name (case-insensitive, as Service Bus's). */
export const authRuleKey = (scopePath: string, keyName: string): Key => ({ pk: AUTH_PK, sk: `${scopePath}|${keyName.toLowerCase()}` });
/** The sort-key prefix of the rules of exactly one scope (`/queues/a|`), not of the scopes below it. */
export const authScopePrefix = (scopePath: string) => `${scopePath}|`;
/**
 * What of a rule may be listed without reading its keys: its key, scope and owning
 * incarnation. The reaper's role may read these attributes alone in the keys table (A4).
 */
export const ruleListingAttributes = ['pk', 'sk', 'scopePath', 'incarnation'] as const;

export const STATS_PK_PREFIX = 'stats/';
export const statsKey = (eid: string): Key => ({ pk: `${STATS_PK_PREFIX}${eid}`, sk: 'stats' });
/** Deleted incarnations whose items the reaper still has to remove (E4). */
export const TOMBSTONE_PK = 'gc';
export const tombstoneKey = (eid: string): Key => ({ pk: TOMBSTONE_PK, sk: eid });
/** A partitioned entity's ready marks: which of its partitions may hold receivable messages. */
export const READY_MARKS_PK_PREFIX = 'ready/';
export const readyMarksKey = (eid: string): Key => ({ pk: `${READY_MARKS_PK_PREFIX}${eid}`, sk: 'ready' });

/** S7: the duplicate-detection marker of a message id in an entity incarnation. */
export const DEDUP_PK_PREFIX = 'dedup/';
export const duplicateMarkerKey = (eid: string, messageId: string): Key => ({ pk: `${DEDUP_PK_PREFIX}${eid}`, sk: messageId });
/** S6 on a topic: where the copies of one scheduled send went, under the number the sender was given. */
export const SCHEDULED_COPIES_PK_PREFIX = 'sched/';
export const scheduledCopiesKey = (topicEid: string, seq: bigint | string): Key => ({ pk: `${SCHEDULED_COPIES_PK_PREFIX}${topicEid}`, sk: padSeq(seq) });
/** The stream consumer's marker of a TTL removal it handled (T7): the removed item's key, and the record's event id. */
export const HANDLED_PK_PREFIX = 'handled/';
export const handledMarkerKey = (removed: Key, eventId: string): Key => ({ pk: `${HANDLED_PK_PREFIX}${removed.pk}`, sk: eventId });
/** The stream consumer's marker of the records of one message item whose counts it added (E6), by that item's key. */
export const COUNTED_PK_PREFIX = 'counted/';
export const countedMarkerKey = (item: Key): Key => ({ pk: `${COUNTED_PK_PREFIX}${item.pk}/${item.sk}`, sk: 'counted' });

/**
 * A stream record the consumer failed to handle for a reason other than load (throttling,
 * conflicts, the network): how many times it failed, by its message item's key and its event
 * id. Kept for two days, like a handled removal's marker.
 */
export const STREAM_FAILURE_PK_PREFIX = 'failing/';
export const streamFailureKey = (item: Key, eventId: string): Key => ({ pk: `${STREAM_FAILURE_PK_PREFIX}${item.pk}/${item.sk}`, sk: eventId });
/**
 * Stream records parked after failing again and again: what they say (a TTL removal's old
 * image is the whole message), until the sweeper applies them. One partition, so an operator
 * counts them with one Query; it holds nothing while nothing fails.
 */
export const PARKED_PK = 'parked';
export const parkedRecordKey = (eventId: string): Key => ({ pk: PARKED_PK, sk: eventId });

/** Every message item's partition key starts so (the stream's event filter matches on it). */
export const MESSAGE_PK_PREFIX = 'msg/';
/** One receive partition of one subqueue of one entity incarnation. */
export const messagePk = (eid: string, subqueue: Subqueue, partition: number) => `${MESSAGE_PK_PREFIX}${eid}/${subqueueSegment[subqueue]}/${partition}`;

/** Reads the incarnation, subqueue and partition out of a partition key made with `prefix`. */
function partitionPkParser(prefix: string) {
  const pattern = new RegExp(`^${prefix}([^/]+)/(${Object.values(subqueueSegment).join('|')})/(\\d+)$`);
  return (pk: string): { eid: string; subqueue: Subqueue; partition: number } | undefined => {
    const m = pattern.exec(pk);
    if (!m) return undefined;
    const subqueue = (Object.entries(subqueueSegment).find(([, s]) => s === m[2])?.[0] ?? 'active') as Subqueue;
    return { eid: m[1]!, subqueue, partition: Number(m[3]) };
  };
}

export const parseMessagePk = partitionPkParser(MESSAGE_PK_PREFIX);

export const messageKey = (eid: string, subqueue: Subqueue, partition: number, seq: bigint | string): Key => ({
  pk: messagePk(eid, subqueue, partition),
  sk: padSeq(seq),
});

/**
 * A lock reminder: one item per peek-lock batch that took its messages out of the ready index
 * (reminders.ts). It sits in the `ready` index of the messages' partition (`rpk` = that
 * message pk) at the batch's lock end, so a receive meets it when the locks lapse; its own pk
 * is apart from the messages' (`remind/<message pk>`), so the table's hot key gets no extra
 * write. The sort key is the batch's id, a hash of its lock tokens (lock-token.ts
 * `batchIdOfLockTokens`): unique, never reused, and known to a complete that holds every token
 * of the batch (reminders written before put the lock end first: `<lock end>/<random id>`).
 */
export const REMINDER_PK_PREFIX = 'remind/';
export const reminderPk = (messagePartitionPk: string) => `${REMINDER_PK_PREFIX}${messagePartitionPk}`;
export const reminderKey = (messagePartitionPk: string, batchId: string): Key => ({
  pk: reminderPk(messagePartitionPk),
  sk: batchId,
});
/** Whether a row of the `ready` index (or any item) is a lock reminder rather than a message. */
export const isReminder = (item: Pick<Key, 'pk'>) => item.pk.startsWith(REMINDER_PK_PREFIX);

/** `ready` index sort key: receivable from `visibleAt` on, oldest first, then by sequence. */
export const readySortKey = (visibleAt: number, seq: bigint | string) => `${padTime(visibleAt)}/${padSeq(seq)}`;
/** Upper bound of the sort keys visible at `now`. */
export const readyUpperBound = (now: number) => `${padTime(now)}/~`;

/**
 * Sessions (N1-N8). A session message is an ordinary message item whose `ready` index
 * partition is its session's own, so "the session's next message" is one Query. A deferred
 * session message keeps that partition with the never-visible MAX_TIME sort key, so "the
 * session still has messages" stays one Query with Limit 1 too.
 */
export const MAX_TIME = 10 ** TIME_DIGITS - 1;
export const sessionReadyPk = (eid: string, partition: number, sessionId: string) => `${messagePk(eid, 'active', partition)}/s/${sessionId}`;
/** Sort key of a deferred session message: in its session's ready partition, never visible. */
export const deferredSortKey = (seq: bigint | string) => readySortKey(MAX_TIME, seq);
/** The partition of an entity's session items (and their state items). */
export const SESSIONS_PK_PREFIX = 'sess/';
export const sessionsPk = (eid: string) => `${SESSIONS_PK_PREFIX}${eid}`;
export const SESSION_SK_PREFIX = 's/';
export const sessionKey = (eid: string, sessionId: string): Key => ({ pk: sessionsPk(eid), sk: `${SESSION_SK_PREFIX}${sessionId}` });
export const SESSION_STATE_SK_PREFIX = 'state/';
export const sessionStateKey = (eid: string, sessionId: string): Key => ({ pk: sessionsPk(eid), sk: `${SESSION_STATE_SK_PREFIX}${sessionId}` });
/**
 * The accept-next index (in the `ready` index): an entity's sessions with messages, sorted
 * by when they can be taken; a locked session sorts at its lock's end, out of the way (N7).
 */
export const SESSION_QUEUE_PK_PREFIX = 'sessq/';
export const sessionQueuePk = (eid: string) => `${SESSION_QUEUE_PK_PREFIX}${eid}`;

/** The sweeper's agenda is spread over a few shards so one hot entity cannot throttle it. */
export const DUE_SHARDS = 4;
export const DUE_PK_PREFIX = 'due/';
export function dueShardOf(pk: string): string {
  let h = 0;
  for (let i = 0; i < pk.length; i++) h = (h * 31 + pk.charCodeAt(i)) | 0;
  return `${DUE_PK_PREFIX}${Math.abs(h) % DUE_SHARDS}`;
}
export const allDueShards = () => Array.from({ length: DUE_SHARDS }, (_, i) => `${DUE_PK_PREFIX}${i}`);
export const IDLE_DUE_PK = 'idle';

export const tableIndex = { ready: 'ready', due: 'due' } as const;

/**
 * Waiting consumers (H1): a WebSocket connection, and one item per entity it waits
 * on. `watchPk` lists an entity's watchers with one Query; `watchedKey` lists the watched
 * entities for the sweeper's lock-lapse check. All carry a TTL at the connection's end of
 * life (API Gateway closes it after 2 hours), so dead connections clean up for free.
 */
export const CONNECTION_PK_PREFIX = 'conn/';
export const connectionKey = (connectionId: string): Key => ({ pk: `${CONNECTION_PK_PREFIX}${connectionId}`, sk: 'conn' });
export const WATCH_PK_PREFIX = 'watch/';
export const watchPk = (hintPath: string) => `${WATCH_PK_PREFIX}${hintPath}`;
export const watchKey = (hintPath: string, connectionId: string): Key => ({ pk: watchPk(hintPath), sk: connectionId });
export const WATCHED_PK = 'watched';
export const watchedKey = (hintPath: string): Key => ({ pk: WATCHED_PK, sk: hintPath });

/**
 * The positioned layout (design.md, "Which way out"; store operations in positions.ts and
 * leases.ts, not yet used by the broker). A partition's messages sit at contiguous positions
 * drawn from a counter, so a receiver reads them in order from a claim cursor and locks are
 * kept in lease items, never on the message. Every prefix here is apart from today's items,
 * so both layouts can share the table while entities move over.
 *
 * - `pos/<eid>/<a|dlq|tdlq>/<partition>` / position (19 digits): a message, or the tombstone
 *   of a hole (positions.ts);
 * - `posnext/<positioned pk>` / `next`: the partition's position counter;
 * - `cursor/<positioned pk>` / `cursor`: the partition's claim cursor and its last claim;
 * - `lease/<positioned pk>` / lock end (15 digits) and claim id: one receive batch's locks.
 */
export const POSITIONED_PK_PREFIX = 'pos/';
export const positionedPk = (eid: string, subqueue: Subqueue, partition: number) => `${POSITIONED_PK_PREFIX}${eid}/${subqueueSegment[subqueue]}/${partition}`;
/** The incarnation, subqueue and partition a positioned partition's key names. */
export const parsePositionedPk = partitionPkParser(POSITIONED_PK_PREFIX);
/** A position as a sort key: 19 digits, as a sequence number. */
export const padPosition = (position: number) => padSeq(String(position));
export const positionKey = (partitionPk: string, position: number): Key => ({ pk: partitionPk, sk: padPosition(position) });
/** The position a positioned item's sort key holds. */
export const positionOfSk = (sk: string) => Number(sk);
export const POSITION_COUNTER_PK_PREFIX = 'posnext/';
export const positionCounterKey = (partitionPk: string): Key => ({ pk: `${POSITION_COUNTER_PK_PREFIX}${partitionPk}`, sk: 'next' });
export const CURSOR_PK_PREFIX = 'cursor/';
export const cursorKey = (partitionPk: string): Key => ({ pk: `${CURSOR_PK_PREFIX}${partitionPk}`, sk: 'cursor' });
export const LEASE_PK_PREFIX = 'lease/';
export const leasePk = (partitionPk: string) => `${LEASE_PK_PREFIX}${partitionPk}`;
/** A lease sorts by its lock end, then its claim id, so the lapsed ones are one Query that finds nothing while none is. */
export const leaseKey = (partitionPk: string, until: number, claimId: number): Key => ({
  pk: leasePk(partitionPk),
  sk: `${padTime(until)}/${padPosition(claimId)}`,
});
/** Upper bound of the sort keys of the leases lapsed at `now`. */
export const lapsedLeasesBound = (now: number) => `${padTime(now)}/~`;
