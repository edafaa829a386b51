/**
 * A ticketed partition's counter item as data (tickets.ts header): its ticket entries, named after
 * their ids, and what a take or a reader of the head makes of them. No I/O, so both the tickets
 * (tickets.ts) and the readers of positions (leases.ts `readHeadCursor`) read the item one way.
 */
import { randomInt } from 'node:crypto';

/** The name of a ticket's entry on the counter item: `u` and its id in base 36. */
export const TICKET_ENTRY_NAME = /^u[0-9a-z]{7,8}$/;

/** A ticket's lease as the counter item keeps it at `u<id>`. */
export interface TicketEntry {
  /** Its lock end. */
  u: number;
  /** Its lock end less its take time (the take: every position of a request it touches was drawn before, a hole's age at least). */
  w: number;
  /** How many positions it holds, from `t<id> + 1`. */
  n: number;
  /** It hands nothing out (given back, or a claim that removes before handing out): its take-back counts no delivery (R3). */
  nd?: 1;
  /** The ticket it was split from (`giveBack`, ticket-settlements.ts `renewTicketed`): a take-back of that one may have marked its messages (`gl`), and its tokens name that one's id. */
  o?: number;
  /** The lock end its tokens state, when a renew moved `u` from it (ticket-settlements.ts `renewTicketed`). */
  r?: number;
}

/** A ticket: positions `first` to `first + count - 1` of a partition, held until `until`. */
export interface Ticket {
  id: number;
  first: number;
  count: number;
  at: number;
  until: number;
  nd?: 1;
  o?: number;
  /** The lock end its tokens state, when a renew moved `until` from it. */
  r?: number;
}

/** The counter item as a take saw it: positions drawn, taken, and the tickets in flight. */
export interface CounterView {
  next: number;
  taken: number;
  tickets: Ticket[];
  /** When the last draw was made (`dt`), if any draw recorded it: every position up to `next` was drawn by then, so a hole among them is at least that old. */
  drawnAt?: number;
  /** `bq`: how many writes queued into the cursor's `back` so far (ticket-back.ts; absent: 0). */
  backQueued: number;
  /** `bc`: the `bq` at which a claim last found `back` empty with no cursor lease (ticket-back.ts `markBackClear`; absent: 0). */
  backClear: number;
}

/*
 * A ticket's attributes are named after its id in base 36 (`t<id>`: the position before its
 * first; `u<id>`: its entry), short because every take and draw is billed by the counter's whole
 * size: about 45 bytes a ticket in flight, so some 20 in flight before a take costs 2 write units.
 * Ids are random in [2^36, 2^41): 7 or 8 digits, never `ttl` or `taken`.
 */
const newId = () => randomInt(2 ** 36, 2 ** 41);
export const entryName = (id: number) => `u${id.toString(36)}`;
export const firstName = (id: number) => `t${id.toString(36)}`;
/** A fresh ticket id (ticket-settlements.ts splits entries under new ids). */
export const newTicketId = newId;

/** Reads the counter item's fields (a returned or read item). */
export function counterView(item: Record<string, unknown> | undefined): CounterView {
  const tickets: Ticket[] = [];
  for (const [name, value] of Object.entries(item ?? {})) {
    if (!TICKET_ENTRY_NAME.test(name)) continue;
    const id = parseInt(name.slice(1), 36);
    const before = item![firstName(id)];
    if (before === undefined) continue;
    const e = value as TicketEntry;
    tickets.push({
      id,
      first: Number(before) + 1,
      count: Number(e.n),
      at: Number(e.u) - Number(e.w),
      until: Number(e.u),
      ...(e.nd ? { nd: 1 as const } : {}),
      ...(e.o !== undefined ? { o: Number(e.o) } : {}),
      ...(e.r !== undefined ? { r: Number(e.r) } : {}),
    });
  }
  tickets.sort((x, y) => x.first - y.first);
  return {
    next: Number(item?.next ?? 0),
    taken: Number(item?.taken ?? 0),
    tickets,
    ...(item?.dt !== undefined ? { drawnAt: Number(item.dt) } : {}),
    backQueued: Number(item?.bq ?? 0),
    backClear: Number(item?.bc ?? 0),
  };
}

/** A ticket's lapsed siblings as a take saw them: to take back (`takeBackTickets`). */
export const lapsedTickets = (view: CounterView, now: number): Ticket[] => view.tickets.filter((t) => t.until <= now);
