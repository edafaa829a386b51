/**
 * Reads of entity items shared between concurrent requests of one process.
 *
 * Every send, receive and settlement reads its entity (E4, E5: is it there, which
 * incarnation, what status). A read answers for a request only if it started after the
 * request asked (so it sees every change made before the request began, as a read of its own
 * would); a read already in flight started too early, so a request arriving meanwhile waits
 * for the next one, which serves every request that asked before it started. A lone request
 * costs one read as before.
 *
 * When a request runs work of its own beside the read (a send's write, a settlement's write)
 * it needs the read's answer only once that work is done. While requests of an entity come
 * in concurrently (the work of another is running too), the next read is put off until it is
 * needed: until one of the requests waiting for it has finished its own work, or asks without
 * any, or until it would otherwise end after their work is likely done (the recent durations
 * of both). Every request that asks meanwhile joins it. Under a load whose writes take longer
 * than a read (DynamoDB Local with a large table: seconds against a tenth of one) that is one
 * read per round of writes, not one per read's round trip. A Lambda serves one request at a
 * time, so on AWS nothing is put off and each request still reads.
 *
 * Also remembered: the entity as the last read saw it and when that read started, for a send
 * that writes before its own read answers (send.ts).
 */
import type { Deps } from '../deps.js';
import { getEntity, type EntityItem } from '../store/entities.js';
import { keyId, type Key } from '../store/keys.js';

type Store = Pick<Deps, 'db' | 'tableName'>;
type Found = EntityItem | undefined;

/** A read no request has started yet: every request that asks before it starts is answered by it. */
interface Next {
  store: Store;
  key: Key;
  answer: Promise<Found>;
  settle: (read: Promise<Found>) => void;
  /** When the first of its requests asked (on the EntityReads' clock). */
  since: number;
  /** A request needs its answer as soon as it can start. */
  needed: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

interface Slot {
  running?: Promise<Found>;
  next?: Next;
}

/** The entity as a read saw it: `at` is when that read started (real time, like every cache here). */
export interface Seen {
  entity: Found;
  at: number;
}

const MAX_REMEMBERED = 10_000;

const copy = (found: Found): Found => (found ? { ...found } : undefined);

/** A running mean of recent durations, ms (undefined until the first). */
class Recent {
  value: number | undefined;
  add(ms: number) {
    this.value = this.value === undefined ? ms : this.value * 0.8 + ms * 0.2;
  }
}

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
  /** Requests of an entity whose own work beside their read is still running: two or more, and they come concurrently. */
  private readonly working = new Map<string, number>();
  private readonly readMs = new Recent();
  private readonly besideMs = new Recent();

  /** `now`: the real-time clock durations are measured on (ms; tests move it). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * The entity item as a read started no earlier than this call finds it (eventually
   * consistent). Each caller gets its own copy. `beside`: the request's own work, running
   * while it waits; the answer is not needed before it ends (see the file comment).
   */
  current(store: Store, key: Key, beside?: Promise<unknown>): Promise<Found> {
    const id = keyId(key);
    let slot = this.slots.get(id);
    if (!slot) this.slots.set(id, (slot = {}));
    const s = slot;
    let next = s.next;
    if (!next) {
      let settle!: Next['settle'];
      const answer = new Promise<Found>((resolve) => (settle = resolve));
      next = s.next = { store, key, answer, settle, since: this.now(), needed: false };
    }
    const joined = next;
    if (beside) {
      const asked = this.now();
      this.working.set(id, (this.working.get(id) ?? 0) + 1);
      const done = () => {
        const left = (this.working.get(id) ?? 1) - 1;
        if (left > 0) this.working.set(id, left);
        else this.working.delete(id);
        this.besideMs.add(this.now() - asked);
        if (s.next === joined) joined.needed = true;
        this.advance(id, s);
      };
      beside.then(done, done);
    } else joined.needed = true;
    this.advance(id, s);
    return joined.answer.then(copy);
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

  /** Starts the slot's next read if it may start now (nothing running) and should (see the file comment), or sets a timer for when it should. */
  private advance(id: string, s: Slot) {
    const next = s.next;
    if (!next || s.running) return;
    const now = this.now();
    const concurrent = (this.working.get(id) ?? 0) > 1;
    const putOff = next.needed || !concurrent ? 0 : Math.max(0, (this.besideMs.value ?? 0) - (this.readMs.value ?? Infinity));
    const due = next.since + putOff;
    if (now < due) {
      next.timer ??= setTimeout(() => {
        next.timer = undefined;
        this.advance(id, s);
      }, due - now);
      next.timer.unref?.();
      return;
    }
    if (next.timer) clearTimeout(next.timer);
    s.next = undefined;
    const at = Date.now();
    const started = this.now();
    const read = getEntity(next.store, next.key);
    s.running = read;
    next.settle(read);
    const done = () => {
      if (s.running === read) s.running = undefined;
      if (s.next) this.advance(id, s);
      else if (!s.running && this.slots.get(id) === s) this.slots.delete(id);
    };
    read.then((found) => {
      this.readMs.add(this.now() - started);
      const before = this.seen.get(id);
      // Reads of one entity start in turn; a later start is the newer word.
      if (!before || before.at <= at) this.remember(id, { entity: found, at });
      done();
    }, done);
  }

  private remember(id: string, seen: Seen) {
    this.seen.delete(id);
    this.seen.set(id, seen);
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value!);
  }
}
