/** `sluice send | peek | receive | tail | dlq resubmit | dlq purge`. */
import { readFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { Long, type ServiceBusReceivedMessage } from '../../../lib/client/message.js';
import type { ServiceBusReceiver } from '../../../lib/client/receiver.js';
import { contextOf, type CliEnv, type Ctx } from '../context.js';
import { CliError, exitCodes, usageError } from '../errors.js';
import { describeTarget, entityPath, parseTarget, receivePath, type Target } from '../entity.js';
import { progress, table } from '../output.js';
import { splitPair } from './entities.js';

/** A received or peeked message as printed: the SDK's ServiceBusReceivedMessage, JSON-safe. */
type Message = Record<string, unknown> & { sequenceNumber: string; state?: string };

function messageView(m: ServiceBusReceivedMessage): Message {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(m)) {
    if (key.startsWith('_') || value === undefined) continue;
    out[key] = Long.isLong(value)
      ? value.toString()
      : value instanceof Date
        ? value.toISOString()
        : value instanceof Uint8Array
          ? { base64: Buffer.from(value).toString('base64') }
          : value;
  }
  return out as Message;
}

/** A receiver for a CLI target (a bare name is a queue). */
function receiverFor(ctx: Ctx, target: Target): ServiceBusReceiver {
  if (target.kind === 'topic') receivePath(target); // throws: a topic holds no messages
  const receiverOptions = { receiveMode: 'peekLock' as const, ...(target.deadLetter ? { subQueueType: 'deadLetter' as const } : {}) };
  return target.kind === 'subscription'
    ? ctx.client().createReceiver(target.topic!, target.name, receiverOptions)
    : ctx.client().createReceiver(target.name, receiverOptions);
}

const whole = (min: number, max: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
  return Number(value);
};
const collect = (value: string, previous: string[] = []) => [...previous, value];
const isoDuration = /^P(?!$)(\d+(?:\.\d+)?D)?(T(?=\d)(\d+(?:\.\d+)?H)?(\d+(?:\.\d+)?M)?(\d+(?:\.\d+)?S)?)?$/;

function messageTable(messages: Message[]): string {
  if (messages.length === 0) return 'no messages\n';
  return table(messages, [
    { header: 'SEQUENCE', value: (m) => m.sequenceNumber },
    { header: 'STATE', value: (m) => m.state },
    { header: 'DELIVERIES', value: (m) => m.deliveryCount },
    { header: 'ENQUEUED', value: (m) => m.enqueuedTimeUtc },
    { header: 'MESSAGE-ID', value: (m) => m.messageId, max: 36 },
    ...(messages.some((m) => m.sessionId) ? [{ header: 'SESSION', value: (m: Message) => m.sessionId }] : []),
    ...(messages.some((m) => m.deadLetterReason) ? [{ header: 'REASON', value: (m: Message) => m.deadLetterReason, max: 30 }] : []),
    { header: 'PROPERTIES', value: (m) => (Object.keys((m.applicationProperties as object | undefined) ?? {}).length ? m.applicationProperties : ''), max: 40 },
    { header: 'BODY', value: (m) => m.body, max: 60 },
  ]);
}

/** A property value as typed as the command line allows: numbers and booleans, else text. */
function propertyValue(text: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(text) && Number.isFinite(Number(text))) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** JSON when the text is JSON (a body of `{"id":1}` stays an object), else the text itself. */
function bodyValue(text: string, raw: boolean): unknown {
  if (raw) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

async function readBody(ctx: Ctx, arg: string | undefined, file: string | undefined, stdinIsTty: boolean): Promise<string> {
  if (arg !== undefined && file !== undefined) throw usageError('give the body once', 'either as an argument or with --file');
  if (arg !== undefined) return arg;
  if (file !== undefined) {
    try {
      return await readFile(file === '-' ? '/dev/stdin' : file, 'utf8');
    } catch (error) {
      throw usageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, 'check the path');
    }
  }
  if (stdinIsTty) throw usageError('no message body', 'give it as an argument, with --file PATH, or on stdin');
  return (await ctx.readStdin()).toString('utf8');
}

function scheduleTime(text: string, now: number): string {
  if (isoDuration.test(text)) {
    const m = isoDuration.exec(text)!;
    const n = (s: string | undefined) => (s ? Number.parseFloat(s) : 0);
    const ms = ((n(m[1]) * 24 + n(m[3])) * 60 * 60 + n(m[4]) * 60 + n(m[5])) * 1000;
    return new Date(now + ms).toISOString();
  }
  const t = Date.parse(text);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(text))
    throw usageError(`--schedule ${text} is not a time`, 'give an ISO instant (2026-11-20T12:00:00Z) or a delay (PT5M)');
  return new Date(t).toISOString();
}

async function sendCommand(cli: CliEnv, entity: string, bodyArg: string | undefined, o: Record<string, unknown>, command: Command) {
  const ctx = contextOf(command, cli);
  const target = parseTarget(entity);
  if (target.deadLetter)
    throw usageError('messages cannot be sent to a dead-letter subqueue', 'send to the queue or topic; resubmit dead letters with sluice dlq resubmit');
  if (target.kind === 'subscription') throw usageError('messages are sent to a topic, not to a subscription', `send to ${target.topic}`);
  const text = await readBody(ctx, bodyArg, o.file as string | undefined, o.stdinIsTty as boolean);
  const count = (o.count as number | undefined) ?? 1;
  const props = Object.fromEntries(
    ((o.property as string[] | undefined) ?? []).map((p) => {
      const [k, v] = splitPair(p);
      return [k, propertyValue(v)];
    }),
  );
  const message: Record<string, unknown> = {
    body: bodyValue(text, o.raw === true),
    ...(o.raw === true ? { contentType: 'text/plain' } : {}),
    ...(o.contentType !== undefined ? { contentType: o.contentType } : {}),
    ...(o.messageId !== undefined ? { messageId: o.messageId } : {}),
    ...(o.correlationId !== undefined ? { correlationId: o.correlationId } : {}),
    ...(o.subject !== undefined ? { subject: o.subject } : {}),
    ...(o.session !== undefined ? { sessionId: o.session } : {}),
    ...(o.ttl !== undefined ? { timeToLive: o.ttl } : {}),
    ...(o.schedule !== undefined ? { scheduledEnqueueTime: scheduleTime(o.schedule as string, ctx.now()) } : {}),
    ...(Object.keys(props).length ? { applicationProperties: props } : {}),
  };
  // A bare name is a queue, else a topic: a 404 on the queue path stored nothing, so trying the topic is safe.
  const notFound = (e: unknown) => e instanceof CliError && e.exitCode === exitCodes.notFound;
  let results: Record<string, unknown>[];
  try {
    results = await sendAll(ctx, `${entityPath(target.kind ? target : { ...target, kind: 'queue' })}/messages`, message, count);
  } catch (error) {
    if (target.kind || !notFound(error)) throw error;
    try {
      results = await sendAll(ctx, `${entityPath({ ...target, kind: 'topic' })}/messages`, message, count);
    } catch (topicError) {
      if (!notFound(topicError)) throw topicError;
      throw new CliError(`no queue or topic named ${target.name}`, exitCodes.notFound, 'check the name (sluice queue list, sluice topic list)');
    }
  }
  const failed = results.filter((r) => 'error' in r);
  ctx.print(count === 1 ? results[0] : results, () =>
    count === 1
      ? `sent to ${describeTarget(target)}: sequence number ${results[0]?.sequenceNumber ?? '-'}${results[0]?.subscriptions ? `, reached ${(results[0].subscriptions as string[]).join(', ') || 'no subscription'}` : ''}\n`
      : `sent ${count - failed.length} of ${count} messages to ${describeTarget(target)}\n`,
  );
  if (failed.length) {
    const first = (failed[0]!.error as { code?: string; message?: string }) ?? {};
    throw new CliError(
      `${failed.length} of ${count} messages were not sent: ${first.code ?? ''} ${first.message ?? ''}`.trim(),
      exitCodes.failed,
      'send those again',
    );
  }
}

/** One message: one POST. More: batches of 100, with a progress bar. */
async function sendAll(ctx: Ctx, path: string, message: Record<string, unknown>, count: number): Promise<Record<string, unknown>[]> {
  const t = ctx.transport();
  if (count === 1) return [await t.request<Record<string, unknown>>('POST', path, { body: message })];
  const bar = progress(ctx.io, 'sending', count);
  const results: Record<string, unknown>[] = [];
  try {
    for (let sent = 0; sent < count;) {
      const n = Math.min(100, count - sent);
      // messageId is kept as given: with duplicate detection on, copies with one id are dropped, as Service Bus does.
      const out = await t.request<{ results: Record<string, unknown>[] }>('POST', `${path}/batch`, {
        body: { messages: Array.from({ length: n }, () => message) },
      });
      results.push(...out.results);
      sent += n;
      bar.update(sent);
    }
  } finally {
    bar.done();
  }
  return results;
}

/** Peeks up to `max` messages from `from` on, keeping those in `states`; the receiver pages through the broker's limit. */
async function peekMessages(receiver: ServiceBusReceiver, from: Long, max: number, states?: Set<string>): Promise<Message[]> {
  if (!states) return (await receiver.peekMessages(max, { fromSequenceNumber: from })).map(messageView);
  // Peek by state (a Sluice extension): filter page by page until enough match.
  const out: Message[] = [];
  for (let next = from; out.length < max;) {
    const page = await receiver.peekMessages(100, { fromSequenceNumber: next });
    for (const m of page) if (states.has(m.state)) out.push(messageView(m));
    if (page.length < 100) break;
    next = page.at(-1)!.sequenceNumber!.add(1);
  }
  return out.slice(0, max);
}

/** The SDK's `state` values. */
const stateNames = ['active', 'scheduled', 'deferred'];
function parseStates(text: string): Set<string> {
  const out = new Set<string>();
  for (const part of text.split(',')) {
    const name = part.trim().toLowerCase();
    if (!stateNames.includes(name)) throw new InvalidArgumentError(`states are ${stateNames.join(', ')}`);
    out.add(name);
  }
  return out;
}

const settleFlags = ['complete', 'abandon', 'deadLetter', 'keep'] as const;

async function receiveCommand(cli: CliEnv, entity: string, o: Record<string, unknown>, command: Command) {
  const ctx = contextOf(command, cli);
  const chosen = settleFlags.filter((f) => o[f] !== undefined && o[f] !== false);
  if (chosen.length > 1) throw usageError('choose one of --complete, --abandon, --dead-letter, --keep');
  const settle = chosen[0] ?? 'complete';
  const receiver = receiverFor(ctx, parseTarget(entity, o.dlq === true));
  const max = (o.max as number | undefined) ?? 1;
  const waitS = o.wait === true ? 20 : ((o.wait as number | undefined) ?? 0);
  try {
    // As the SDK does: wait up to maxWaitTimeInMs for the first message, then take what is ready.
    const got = await receiver.receiveMessages(max, { maxWaitTimeInMs: waitS * 1000, abortSignal: ctx.signal });
    const reason = typeof o.deadLetter === 'string' ? o.deadLetter : undefined;
    const description = typeof o.description === 'string' ? o.description : undefined;
    // Printed only after settling: a message the CLI shows as completed is completed.
    const views = got.map(messageView);
    await Promise.all(
      got.map((m) =>
        settle === 'complete'
          ? receiver.completeMessage(m)
          : settle === 'abandon'
            ? receiver.abandonMessage(m)
            : settle === 'deadLetter'
              ? // The SDK's type wants both; either may be left out, as in Service Bus.
                receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: description } as Parameters<
                  ServiceBusReceiver['deadLetterMessage']
                >[1])
              : undefined,
      ),
    );
    const verb = { complete: 'completed', abandon: 'abandoned', deadLetter: 'dead-lettered', keep: 'locked' }[settle];
    ctx.print(views, (ms) => `${messageTable(ms)}${ms.length ? `${ms.length} ${verb}\n` : ''}`);
  } finally {
    await ctx.client().close();
  }
}

/** Follows new messages without taking them: peeks past the last one seen, every interval. */
async function tailCommand(cli: CliEnv, entity: string, o: Record<string, unknown>, command: Command) {
  const ctx = contextOf(command, cli);
  const target = parseTarget(entity, o.dlq === true);
  const receiver = receiverFor(ctx, target);
  const intervalMs = ((o.interval as number | undefined) ?? 1) * 1000;
  try {
    // Start after what is there now: skip to the end without printing.
    let next = Long.ZERO;
    for (;;) {
      const page = await receiver.peekMessages(100, { fromSequenceNumber: next });
      if (page.length) next = page.at(-1)!.sequenceNumber!.add(1);
      if (page.length < 100) break;
    }
    ctx.io.err(`following ${describeTarget(target)}; Ctrl-C to stop\n`);
    if (!ctx.options.json) ctx.io.out('SEQUENCE  ENQUEUED  MESSAGE-ID  BODY\n');
    while (!ctx.signal.aborted) {
      for (const m of await receiver.peekMessages(1000, { fromSequenceNumber: next })) {
        const v = messageView(m);
        // One line per message: JSON lines with --json, so a script can read them as they come.
        ctx.io.out(ctx.options.json ? `${JSON.stringify(v)}\n` : `${v.sequenceNumber}  ${v.enqueuedTimeUtc}  ${v.messageId}  ${JSON.stringify(v.body)}\n`);
        next = m.sequenceNumber!.add(1);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        ctx.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
    }
  } finally {
    await ctx.client().close();
  }
}

type Counts = { runtime?: { deadLetterMessageCount?: number } };

async function deadLetterCount(ctx: Ctx, target: Target): Promise<number | undefined> {
  const e = await ctx.transport().request<Counts>('GET', entityPath(target));
  return e.runtime?.deadLetterMessageCount;
}

async function resubmitCommand(cli: CliEnv, entity: string, o: Record<string, unknown>, command: Command) {
  const ctx = contextOf(command, cli);
  const target = parseTarget(entity, true);
  const max = o.max as number | undefined;
  const to = o.to === undefined ? undefined : parseTarget(o.to as string);
  const total = max ?? (await deadLetterCount(ctx, target));
  const bar = progress(ctx.io, 'resubmitting', total);
  let resubmitted = 0;
  try {
    for (;;) {
      const page = Math.min(1000, max === undefined ? 1000 : max - resubmitted);
      if (page <= 0) break;
      const out = await ctx.transport().request<{ resubmitted: number; remaining: boolean }>('POST', `${receivePath(target)}/resubmit`, {
        body: { maxMessages: page, ...(to ? { to: entityPath(to).slice(1) } : {}) },
      });
      resubmitted += out.resubmitted;
      bar.update(resubmitted);
      if (!out.remaining || out.resubmitted === 0) break;
    }
  } finally {
    bar.done();
  }
  ctx.print({ resubmitted }, () => `resubmitted ${resubmitted} message${resubmitted === 1 ? '' : 's'} from ${describeTarget(target)}\n`);
}

async function purgeCommand(cli: CliEnv, entity: string, _o: Record<string, unknown>, command: Command) {
  const ctx = contextOf(command, cli);
  const target = parseTarget(entity, true);
  const bar = progress(ctx.io, 'purging', await deadLetterCount(ctx, target));
  let purged = 0;
  try {
    // One call deletes for up to 20 s and answers with what it did; call again until nothing is left.
    for (;;) {
      const out = await ctx.transport().request<{ purged: number }>('DELETE', `${receivePath(target)}/messages`);
      purged += out.purged;
      bar.update(purged);
      if (out.purged === 0) break;
    }
  } finally {
    bar.done();
  }
  ctx.print({ purged }, () => `purged ${purged} message${purged === 1 ? '' : 's'} from ${describeTarget(target)}\n`);
}

export function messageCommands(cli: CliEnv, stdinIsTty: boolean): Command[] {
  const send = new Command('send')
    .description('send a message to a queue or topic; the body is an argument, a file, or stdin')
    .argument('<entity>', 'QUEUE or TOPIC (queues/NAME, topics/NAME to be explicit)')
    .argument('[body]', 'the body; JSON is sent as JSON, anything else as text')
    .option('-f, --file <path>', 'read the body from a file (- for stdin)')
    .option('--raw', 'send the body as text even when it is JSON')
    .option('-p, --property <key=value>', 'an application property (repeatable); numbers and true/false are typed', collect)
    .option('--schedule <time>', 'enqueue later: an ISO instant or a delay such as PT5M')
    .option('--session <id>', 'session id')
    .option('--message-id <id>', 'message id (default: a new GUID)')
    .option('--correlation-id <id>', 'correlation id')
    .option('--subject <subject>', 'subject (label)')
    .option('--content-type <type>', 'content type')
    .option('--ttl <duration>', 'time to live, e.g. PT10M')
    .option('-n, --count <n>', 'send this many copies (in batches of 100)', whole(1, 1_000_000), 1)
    .action((entity: string, body: string | undefined, o: Record<string, unknown>, command: Command) =>
      sendCommand(cli, entity, body, { ...o, stdinIsTty }, command),
    );

  const peek = new Command('peek')
    .description('look at messages without locking or removing them (scheduled and deferred included)')
    .argument('<entity>', 'QUEUE or TOPIC/subscriptions/SUBSCRIPTION')
    .option('--dead-letter', 'the dead-letter subqueue')
    .addOption(new Option('--state <states>', 'only these states, comma-separated: active, scheduled, deferred').argParser(parseStates))
    .option('--max <n>', 'at most this many', whole(1, 1_000_000), 10)
    .option('--from <sequenceNumber>', 'from this sequence number on', '0')
    .action(async (entity: string, o: Record<string, unknown>, command: Command) => {
      const ctx = contextOf(command, cli);
      if (!/^\d+$/.test(o.from as string)) throw usageError('--from must be a sequence number');
      const receiver = receiverFor(ctx, parseTarget(entity, o.deadLetter === true));
      try {
        ctx.print(await peekMessages(receiver, Long.fromString(o.from as string), o.max as number, o.state as Set<string> | undefined), messageTable);
      } finally {
        await ctx.client().close();
      }
    });

  const receive = new Command('receive')
    .description('receive under a lock, print, then settle: complete (default), abandon, dead-letter, or keep the lock')
    .argument('<entity>', 'QUEUE or TOPIC/subscriptions/SUBSCRIPTION (append /$deadletterqueue or pass --dlq for dead letters)')
    .option('--max <n>', 'at most this many', whole(1, 10_000), 1)
    .addOption(new Option('--wait [seconds]', 'wait for a message to arrive (bare: 20 s, the longest)').argParser(whole(0, 20)))
    .option('--complete', 'remove them (the default)')
    .option('--abandon', 'put them back (their delivery count goes up)')
    .option('--dead-letter [reason]', 'move them to the dead-letter subqueue, with this reason')
    .option('--description <text>', 'with --dead-letter: the error description')
    .option('--keep', 'leave them locked until the lock expires (prints the lock tokens)')
    .option('--dlq', 'receive from the dead-letter subqueue')
    .action((entity: string, o: Record<string, unknown>, command: Command) => receiveCommand(cli, entity, o, command));

  const tail = new Command('tail')
    .description('print messages as they arrive, without taking them (Ctrl-C stops); one JSON line each with --json')
    .argument('<entity>', 'QUEUE or TOPIC/subscriptions/SUBSCRIPTION')
    .option('--dlq', 'follow the dead-letter subqueue')
    .option('--interval <seconds>', 'how often to look (each look is one peek request)', whole(1, 3600), 1)
    .action((entity: string, o: Record<string, unknown>, command: Command) => tailCommand(cli, entity, o, command));

  const dlq = new Command('dlq').description('dead-letter subqueues');
  dlq.addCommand(
    new Command('resubmit')
      .description('send dead letters back to their queue or subscription (or --to another), as new messages')
      .argument('<entity>', 'QUEUE or TOPIC/subscriptions/SUBSCRIPTION')
      .option('--max <n>', 'at most this many', whole(1, 100_000_000))
      .option('--to <entity>', 'another queue or subscription to send them to')
      .action((entity: string, o: Record<string, unknown>, command: Command) => resubmitCommand(cli, entity, o, command)),
  );
  dlq.addCommand(
    new Command('purge')
      .description('delete every dead letter of a queue or subscription')
      .argument('<entity>', 'QUEUE or TOPIC/subscriptions/SUBSCRIPTION')
      .action((entity: string, o: Record<string, unknown>, command: Command) => purgeCommand(cli, entity, o, command)),
  );
  return [send, peek, receive, tail, dlq];
}
