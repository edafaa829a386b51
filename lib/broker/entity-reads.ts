/**
 * Reads of entity items shared between concurrent requests of one process.
 *
 * Every send, receive and settlement reads its entity (E4, E5: is it there, which
 * incarnation, what status). A read answers for a request only if it started after the
 * request asked (so it sees every change made before the request began, as a read of its own
 * would); a read already in flight started too early, so a request arriving meanwhile waits
 * for the next one, which starts as soon as that one ends and serves every request that
 * arrived during it. A lone request costs one read as before; under load the reads of an
 * entity run back to back, one per round trip, whatever the number of requests.
 *
 * Also remembered: the entity as the last read saw it and when that read started, for a send
 * that writes before its own read answers (send.ts).
 */
import type { Deps } from '../deps.js';
import { getEntity, type EntityItem } from '../store/entities.js';
import { keyId, type Key } from '../store/keys.js';

type Store = Pick<Deps, 'db' | 'tableName'>;
type Found = EntityItem | undefined;

interface Slot {
  running?: Promise<Found>;
  /** The read that starts when `running` ends: requests that came after `running` began join it. */
  queued?: Promise<Found>;
}

/** The entity as a read saw it: `at` is when that read started (real time, like every cache here). */
export interface Seen {
  entity: Found;
  at: number;
}

const MAX_REMEMBERED = 10_000;

const copy = (found: Found): Found => (found ? { ...found } : undefined);

/**
 * One EntityReads per client and table: a process's requests share them (the api handler
 * has one client), while a client of its own (a test's faulty one) reads for itself.
 */
const byClient = new WeakMap<object, Map<string, EntityReads>>();
export function entityReadsOf(store: Store): EntityReads {
  let tables = byClient.get(store.db);
  if (!tables) byClient.set(store.db, (tables = new Map()));
  let reads = tables.get(store.tableName);
  if (!reads) tables.set(store.tableName, (reads = new EntityReads()));
  return reads;
}

export class EntityReads {
  private readonly slots = new Map<string, Slot>();
  private readonly seen = new Map<string, Seen>();

  /** The entity item as a read started no earlier than this call finds it (eventually consistent). Each caller gets its own copy. */
  current(store: Store, key: Key): Promise<Found> {
    const id = keyId(key);
    let slot = this.slots.get(id);
    if (!slot) this.slots.set(id, (slot = {}));
    const s = slot;
    const start = (): Promise<Found> => {
      const at = Date.now();
      const read = getEntity(store, key);
      s.running = read;
      const done = () => {
        if (s.running === read) s.running = undefined;
        if (!s.running && !s.queued && this.slots.get(id) === s) this.slots.delete(id);
      };
      read.then((found) => {
        const before = this.seen.get(id);
        // Reads of one entity start in turn; a later start is the newer word.
        if (!before || before.at <= at) this.remember(id, { entity: found, at });
        done();
      }, done);
      return read;
    };
    let read: Promise<Found>;
    if (s.queued) read = s.queued;
    else if (!s.running) read = start();
    else {
      const after = s.running.then(
        () => undefined,
        () => undefined,
      );
      read = s.queued = after.then(() => {
        s.queued = undefined;
        return start();
      });
    }
    return read.then(copy);
  }

  /** The entity as the last read of it saw it, if one was made. */
  lastSeen(key: Key): Seen | undefined {
    const seen = this.seen.get(keyId(key));
    return seen && { entity: copy(seen.entity), at: seen.at };
  }

  /** Forgets what was seen of the entity (it changed under a request). */
  forget(key: Key): void {
    this.seen.delete(keyId(key));
  }

  private remember(id: string, seen: Seen) {
    this.seen.delete(id);
    this.seen.set(id, seen);
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value!);
  }
}
