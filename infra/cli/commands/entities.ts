/** `sluice queue|topic|subscription|rule create|show|list|update|delete`. */
import { Command } from 'commander';
import { contextOf, type CliEnv, type Ctx } from '../context.js';
import { CliError, exitCodes, usageError } from '../errors.js';
import { checkName, entityPath, type EntityName, type Kind } from '../entity.js';
import { record, table } from '../output.js';
import { addPropertyOptions, propertiesFrom } from '../properties.js';

type Entity = Record<string, unknown> & { name?: string; runtime?: Record<string, unknown> };
type Page<T> = { items: T[]; next: string | null };

async function exists(ctx: Ctx, path: string): Promise<boolean> {
  try {
    await ctx.transport().request('GET', path);
    return true;
  } catch (error) {
    if (error instanceof CliError && error.exitCode === exitCodes.notFound) return false;
    throw error;
  }
}

/** Every page of a list (the broker pages by 100). */
async function listAll<T>(ctx: Ctx, path: string): Promise<T[]> {
  const items: T[] = [];
  let next: string | null = null;
  do {
    const page: Page<T> = await ctx.transport().request<Page<T>>('GET', path, { query: { next: next ?? undefined } });
    items.push(...page.items);
    next = page.next;
  } while (next);
  return items;
}

const runtimeOf = (e: Entity) => (e.runtime ?? {}) as Record<string, unknown>;

function entityTable(kind: Kind, rows: Entity[]): string {
  if (rows.length === 0) return `no ${kind === 'subscription' ? 'subscriptions' : `${kind}s`}\n`;
  return table(rows, [
    { header: 'NAME', value: (e) => e.name },
    { header: 'STATUS', value: (e) => e.status },
    ...(kind === 'topic'
      ? []
      : [
          { header: 'ACTIVE', value: (e: Entity) => runtimeOf(e).activeMessageCount },
          { header: 'DEAD-LETTER', value: (e: Entity) => runtimeOf(e).deadLetterMessageCount },
        ]),
    { header: 'SCHEDULED', value: (e) => runtimeOf(e).scheduledMessageCount },
    ...(kind === 'topic' ? [] : [{ header: 'LOCK', value: (e: Entity) => e.lockDuration }, { header: 'MAX-DELIVERY', value: (e: Entity) => e.maxDeliveryCount }]),
  ]);
}

const showEntity = (e: Entity) => record(e);

/** The create/show/list/update/delete family for queues, topics and subscriptions. */
function entityCommands(cli: CliEnv, kind: Kind): Command {
  const isSub = kind === 'subscription';
  const args = isSub ? '<topic> <name>' : '<name>';
  const nameOf = (topic: string, name?: string): EntityName =>
    isSub ? { kind, topic: checkName(topic, 'topic'), name: checkName(name!, kind) } : { kind, name: checkName(topic, kind) };
  const label = (e: EntityName) => (isSub ? `${e.topic}/subscriptions/${e.name}` : e.name);
  const group = new Command(kind).description(`manage ${kind === 'subscription' ? 'subscriptions' : `${kind}s`}`);

  const create = addPropertyOptions(new Command('create').description(`create a ${kind}; fails if it exists`).arguments(args), kind);
  create.action(async (...a: unknown[]) => {
    const command = a.at(-1) as Command;
    const ctx = contextOf(command, cli);
    const ref = nameOf(a[0] as string, isSub ? (a[1] as string) : undefined);
    const body = propertiesFrom(kind, command.opts());
    // PUT creates or replaces; `create` must not replace (as the SDK's createQueue), so look first.
    if (await exists(ctx, entityPath(ref))) {
      throw new CliError(`${kind} ${label(ref)} already exists`, exitCodes.conflict, `change it with sluice ${kind} update`);
    }
    const created = await ctx.transport().request<Entity>('PUT', entityPath(ref), { body });
    ctx.print(created, (e) => `created ${kind} ${label(ref)}\n${showEntity(e)}`);
  });

  const update = addPropertyOptions(new Command('update').description(`change the given properties of a ${kind}`).arguments(args), kind);
  update.action(async (...a: unknown[]) => {
    const command = a.at(-1) as Command;
    const ctx = contextOf(command, cli);
    const ref = nameOf(a[0] as string, isSub ? (a[1] as string) : undefined);
    const body = propertiesFrom(kind, command.opts());
    if (Object.keys(body).length === 0) throw usageError('nothing to update', `give at least one property, see sluice ${kind} update --help`);
    if (!(await exists(ctx, entityPath(ref)))) throw new CliError(`${kind} ${label(ref)} does not exist`, exitCodes.notFound, `create it with sluice ${kind} create`);
    const updated = await ctx.transport().request<Entity>('PUT', entityPath(ref), { body });
    ctx.print(updated, (e) => `updated ${kind} ${label(ref)}\n${showEntity(e)}`);
  });

  const show = new Command('show').description(`properties and message counts of a ${kind}`).arguments(args).action(async (...a: unknown[]) => {
    const ctx = contextOf(a.at(-1) as Command, cli);
    const ref = nameOf(a[0] as string, isSub ? (a[1] as string) : undefined);
    ctx.print(await ctx.transport().request<Entity>('GET', entityPath(ref)), showEntity);
  });

  const list = new Command('list')
    .description(isSub ? 'the subscriptions of a topic' : `every ${kind}`)
    .argument(isSub ? '<topic>' : '[unused...]')
    .action(async (...a: unknown[]) => {
      const ctx = contextOf(a.at(-1) as Command, cli);
      if (!isSub && (a[0] as string[]).length > 0) throw usageError(`${kind} list takes no name`, `use sluice ${kind} show NAME`);
      const path = isSub ? `/topics/${encodeURIComponent(checkName(a[0] as string, 'topic'))}/subscriptions` : `/${kind}s`;
      ctx.print(await listAll<Entity>(ctx, path), (rows) => entityTable(kind, rows));
    });

  const remove = new Command('delete').description(`delete a ${kind} and its messages`).arguments(args).action(async (...a: unknown[]) => {
    const ctx = contextOf(a.at(-1) as Command, cli);
    const ref = nameOf(a[0] as string, isSub ? (a[1] as string) : undefined);
    await ctx.transport().request('DELETE', entityPath(ref));
    ctx.print({ deleted: label(ref) }, () => `deleted ${kind} ${label(ref)}\n`);
  });

  return group.addCommand(create).addCommand(show).addCommand(list).addCommand(update).addCommand(remove);
}

/** Rule filter and action from flags: exactly one of --sql, correlation fields, --true, --false. */
function ruleBody(o: Record<string, unknown>): Record<string, unknown> {
  const correlationKeys = ['correlationId', 'messageId', 'to', 'replyTo', 'subject', 'sessionId', 'replyToSessionId', 'contentType'] as const;
  const correlation: Record<string, unknown> = {};
  for (const k of correlationKeys) if (o[k] !== undefined) correlation[k] = o[k];
  const props = (o.property as string[] | undefined) ?? [];
  if (props.length) correlation.properties = Object.fromEntries(props.map(splitPair));
  const kinds = [o.sql !== undefined, Object.keys(correlation).length > 0, o.true === true, o.false === true].filter(Boolean).length;
  if (kinds > 1) throw usageError('a rule has one filter', 'give --sql, or correlation flags (--correlation-id, --subject, --property ...), or --true, or --false');
  const filter =
    o.sql !== undefined ? { sql: o.sql } : Object.keys(correlation).length ? { correlation } : o.false === true ? { false: {} } : kinds ? { true: {} } : undefined;
  return { ...(filter ? { filter } : {}), ...(o.action !== undefined ? { action: { sql: o.action } } : {}) };
}

export function splitPair(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw usageError(`"${text}" is not key=value`, 'write --property name=value');
  return [text.slice(0, eq), text.slice(eq + 1)];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function ruleFilterOptions(command: Command): Command {
  return command
    .option('--sql <expression>', "SQL filter, e.g. \"color = 'red'\"")
    .option('--correlation-id <id>', 'correlation filter: correlationId')
    .option('--message-id <id>', 'correlation filter: messageId')
    .option('--subject <subject>', 'correlation filter: subject')
    .option('--session-id <id>', 'correlation filter: sessionId')
    .option('--to <to>', 'correlation filter: to')
    .option('--reply-to <replyTo>', 'correlation filter: replyTo')
    .option('--reply-to-session-id <id>', 'correlation filter: replyToSessionId')
    .option('--content-type <type>', 'correlation filter: contentType')
    .option('--property <key=value>', 'correlation filter: an application property (repeatable)', collect)
    .option('--true', 'match every message (the default filter)')
    .option('--false', 'match no message')
    .option('--action <sql>', "SQL action, e.g. \"SET priority = 'high'\"");
}

function ruleCommands(cli: CliEnv): Command {
  const group = new Command('rule').description('manage the rules (filters) of a subscription');
  const pathOf = (topic: string, sub: string, rule?: string) =>
    `/topics/${encodeURIComponent(checkName(topic, 'topic'))}/subscriptions/${encodeURIComponent(checkName(sub, 'subscription'))}/rules${rule === undefined ? '' : `/${encodeURIComponent(ruleName(rule))}`}`;
  // Every subscription starts with the rule `$Default`; other names follow the entity rules.
  const ruleName = (rule: string) => (rule === '$Default' ? rule : checkName(rule, 'rule'));
  const showRule = (r: Entity) => record(r);

  group.addCommand(
    ruleFilterOptions(new Command('create').description('add a rule to a subscription; fails if it exists').arguments('<topic> <subscription> <rule>')).action(
      async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        const body = ruleBody(command.opts());
        if (await exists(ctx, pathOf(topic, sub, rule))) throw new CliError(`rule ${rule} already exists`, exitCodes.conflict, 'change it with sluice rule update');
        ctx.print(await ctx.transport().request<Entity>('PUT', pathOf(topic, sub, rule), { body: { filter: { true: {} }, ...body } }), (r) => `created rule ${rule}\n${showRule(r)}`);
      },
    ),
  );
  group.addCommand(
    ruleFilterOptions(new Command('update').description("replace a rule's filter or action").arguments('<topic> <subscription> <rule>')).action(
      async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        const body = ruleBody(command.opts());
        if (Object.keys(body).length === 0) throw usageError('nothing to update', 'give a filter (--sql, --correlation-id, ...) or --action');
        if (!(await exists(ctx, pathOf(topic, sub, rule)))) throw new CliError(`rule ${rule} does not exist`, exitCodes.notFound, 'create it with sluice rule create');
        ctx.print(await ctx.transport().request<Entity>('PUT', pathOf(topic, sub, rule), { body }), (r) => `updated rule ${rule}\n${showRule(r)}`);
      },
    ),
  );
  group.addCommand(
    new Command('show').arguments('<topic> <subscription> <rule>').description("a rule's filter and action").action(async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
      const ctx = contextOf(command, cli);
      ctx.print(await ctx.transport().request<Entity>('GET', pathOf(topic, sub, rule)), showRule);
    }),
  );
  group.addCommand(
    new Command('list').arguments('<topic> <subscription>').description('the rules of a subscription').action(async (topic: string, sub: string, _o: unknown, command: Command) => {
      const ctx = contextOf(command, cli);
      ctx.print(await listAll<Entity>(ctx, pathOf(topic, sub)), (rows) =>
        rows.length === 0
          ? 'no rules\n'
          : table(rows, [
              { header: 'NAME', value: (r) => r.name },
              { header: 'FILTER', value: (r) => r.filter, max: 60 },
              { header: 'ACTION', value: (r) => r.action, max: 40 },
            ]),
      );
    }),
  );
  group.addCommand(
    new Command('delete').arguments('<topic> <subscription> <rule>').description('remove a rule').action(async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
      const ctx = contextOf(command, cli);
      await ctx.transport().request('DELETE', pathOf(topic, sub, rule));
      ctx.print({ deleted: rule }, () => `deleted rule ${rule}\n`);
    }),
  );
  return group;
}

export function entityGroups(cli: CliEnv): Command[] {
  return [entityCommands(cli, 'queue'), entityCommands(cli, 'topic'), entityCommands(cli, 'subscription'), ruleCommands(cli)];
}

