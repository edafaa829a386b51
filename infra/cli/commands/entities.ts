/** `sluice queue|topic|subscription|rule create|show|list|update|delete`, on sluice/client's ServiceBusAdministrationClient. */
import { Command } from 'commander';
import { UNLIMITED_DURATION, type ServiceBusAdministrationClient } from '../../../lib/client/admin.js';
import type {
  CorrelationRuleFilter,
  CreateQueueOptions,
  CreateSubscriptionOptions,
  CreateTopicOptions,
  QueueProperties,
  RuleProperties,
  SqlRuleAction,
  SqlRuleFilter,
  SubscriptionProperties,
  TopicProperties,
  WithResponse,
} from '../../../lib/client/admin-types.js';
import type { PagedAsyncIterableIterator } from '../../../lib/client/paging.js';
import { contextOf, type CliEnv } from '../context.js';
import { usageError } from '../errors.js';
import { checkName, type Kind } from '../entity.js';
import { record, table } from '../output.js';
import { addPropertyOptions, propertiesFrom } from '../properties.js';

type Json = Record<string, unknown>;
/** An entity as the CLI shows it: the SDK's properties, with its runtime properties under `runtime`. */
type Entity = Json & { name?: string; runtime?: Json };

/** The SDK's answers carry `_response`; what is printed is the data. */
function plain(value: object): Json {
  const { _response: _, ...rest } = value as Json;
  return rest;
}

async function all<T extends object>(iterator: PagedAsyncIterableIterator<T, unknown>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterator) out.push(item);
  return out;
}

/** Flags hold the broker's spellings; the SDK writes an unlimited duration as TimeSpan.MaxValue. */
function sdkOptions(props: Json): Json {
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, v === null ? (/forward/i.test(k) ? '' : UNLIMITED_DURATION) : v]));
}

/** The SDK's calls for one kind, by name: `orders` or, for subscriptions, `events` + `audit`. */
interface KindCalls {
  create(a: ServiceBusAdministrationClient, n: string[], options: Json): Promise<object>;
  get(a: ServiceBusAdministrationClient, n: string[]): Promise<object>;
  runtime(a: ServiceBusAdministrationClient, n: string[]): Promise<object>;
  list(a: ServiceBusAdministrationClient, n: string[]): PagedAsyncIterableIterator<object, unknown>;
  listRuntime(a: ServiceBusAdministrationClient, n: string[]): PagedAsyncIterableIterator<object, unknown>;
  update(a: ServiceBusAdministrationClient, entity: object): Promise<object>;
  remove(a: ServiceBusAdministrationClient, n: string[]): Promise<unknown>;
}

const calls: Record<Kind, KindCalls> = {
  queue: {
    create: (a, [q], o) => a.createQueue(q!, o as CreateQueueOptions),
    get: (a, [q]) => a.getQueue(q!),
    runtime: (a, [q]) => a.getQueueRuntimeProperties(q!),
    list: (a) => a.listQueues(),
    listRuntime: (a) => a.listQueuesRuntimeProperties(),
    update: (a, e) => a.updateQueue(e as WithResponse<QueueProperties>),
    remove: (a, [q]) => a.deleteQueue(q!),
  },
  topic: {
    create: (a, [t], o) => a.createTopic(t!, o as CreateTopicOptions),
    get: (a, [t]) => a.getTopic(t!),
    runtime: (a, [t]) => a.getTopicRuntimeProperties(t!),
    list: (a) => a.listTopics(),
    listRuntime: (a) => a.listTopicsRuntimeProperties(),
    update: (a, e) => a.updateTopic(e as WithResponse<TopicProperties>),
    remove: (a, [t]) => a.deleteTopic(t!),
  },
  subscription: {
    create: (a, [t, s], o) => a.createSubscription(t!, s!, o as CreateSubscriptionOptions),
    get: (a, [t, s]) => a.getSubscription(t!, s!),
    runtime: (a, [t, s]) => a.getSubscriptionRuntimeProperties(t!, s!),
    list: (a, [t]) => a.listSubscriptions(t!),
    listRuntime: (a, [t]) => a.listSubscriptionsRuntimeProperties(t!),
    update: (a, e) => a.updateSubscription(e as WithResponse<SubscriptionProperties>),
    remove: (a, [t, s]) => a.deleteSubscription(t!, s!),
  },
};

/** Runtime properties minus what the properties already say. */
function runtimeView(runtime: object): Json {
  const { name: _n, topicName: _t, subscriptionName: _s, ...rest } = plain(runtime);
  return rest;
}

async function view(a: ServiceBusAdministrationClient, kind: Kind, n: string[], properties?: object): Promise<Entity> {
  const [props, runtime] = await Promise.all([properties ?? calls[kind].get(a, n), calls[kind].runtime(a, n)]);
  return { ...plain(props), runtime: runtimeView(runtime) };
}

const runtimeOf = (e: Entity) => (e.runtime ?? {}) as Json;
/** What people read: "unlimited" instead of TimeSpan.MaxValue. */
const human = (e: Json): Json => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === UNLIMITED_DURATION ? 'unlimited' : v]));

function entityTable(kind: Kind, rows: Entity[]): string {
  if (rows.length === 0) return `no ${kind === 'subscription' ? 'subscriptions' : `${kind}s`}\n`;
  return table(rows, [
    { header: 'NAME', value: (e) => e.name ?? e.subscriptionName },
    { header: 'STATUS', value: (e) => e.status },
    ...(kind === 'topic'
      ? []
      : [
          { header: 'ACTIVE', value: (e: Entity) => runtimeOf(e).activeMessageCount },
          { header: 'DEAD-LETTER', value: (e: Entity) => runtimeOf(e).deadLetterMessageCount },
        ]),
    // The SDK's subscription runtime properties have no scheduled count.
    ...(kind === 'subscription' ? [] : [{ header: 'SCHEDULED', value: (e: Entity) => runtimeOf(e).scheduledMessageCount }]),
    ...(kind === 'topic'
      ? []
      : [
          { header: 'LOCK', value: (e: Entity) => e.lockDuration },
          { header: 'MAX-DELIVERY', value: (e: Entity) => e.maxDeliveryCount },
        ]),
  ]);
}

const showEntity = (e: Entity) => record({ ...human(e), ...(e.runtime ? { runtime: e.runtime } : {}) });

/** The create/show/list/update/delete family for queues, topics and subscriptions. */
function entityCommands(cli: CliEnv, kind: Kind): Command {
  const isSub = kind === 'subscription';
  const args = isSub ? '<topic> <name>' : '<name>';
  const namesOf = (a: unknown[]): string[] =>
    isSub ? [checkName(a[0] as string, 'topic'), checkName(a[1] as string, kind)] : [checkName(a[0] as string, kind)];
  const label = (n: string[]) => n.join('/subscriptions/');
  const group = new Command(kind).description(`manage ${kind === 'subscription' ? 'subscriptions' : `${kind}s`}`);
  const k = calls[kind];

  const create = addPropertyOptions(new Command('create').description(`create a ${kind}; fails if it exists`).arguments(args), kind);
  create.action(async (...a: unknown[]) => {
    const command = a.at(-1) as Command;
    const ctx = contextOf(command, cli);
    const n = namesOf(a);
    const options = sdkOptions(propertiesFrom(kind, command.opts()));
    const admin = ctx.admin();
    // As the SDK's createQueue: refused (exit 5) when it exists, never replaced.
    const created = await k.create(admin, n, options);
    ctx.print(await view(admin, kind, n, created), (e) => `created ${kind} ${label(n)}\n${showEntity(e)}`);
  });

  const update = addPropertyOptions(new Command('update').description(`change the given properties of a ${kind}`).arguments(args), kind);
  update.action(async (...a: unknown[]) => {
    const command = a.at(-1) as Command;
    const ctx = contextOf(command, cli);
    const n = namesOf(a);
    const changes = sdkOptions(propertiesFrom(kind, command.opts()));
    if (Object.keys(changes).length === 0) throw usageError('nothing to update', `give at least one property, see sluice ${kind} update --help`);
    const admin = ctx.admin();
    // The SDK updates from the whole properties object, as a program does: get, change, update.
    const current = await k.get(admin, n);
    const updated = await k.update(admin, Object.assign(current, changes));
    ctx.print(await view(admin, kind, n, updated), (e) => `updated ${kind} ${label(n)}\n${showEntity(e)}`);
  });

  const show = new Command('show')
    .description(`properties and message counts of a ${kind}`)
    .arguments(args)
    .action(async (...a: unknown[]) => {
      const ctx = contextOf(a.at(-1) as Command, cli);
      ctx.print(await view(ctx.admin(), kind, namesOf(a)), showEntity);
    });

  const list = new Command('list')
    .description(isSub ? 'the subscriptions of a topic' : `every ${kind}`)
    .argument(isSub ? '<topic>' : '[unused...]')
    .action(async (...a: unknown[]) => {
      const ctx = contextOf(a.at(-1) as Command, cli);
      if (!isSub && (a[0] as string[]).length > 0) throw usageError(`${kind} list takes no name`, `use sluice ${kind} show NAME`);
      const n = isSub ? [checkName(a[0] as string, 'topic')] : [];
      const admin = ctx.admin();
      const [props, runtimes] = await Promise.all([all(k.list(admin, n)), all(k.listRuntime(admin, n))]);
      const nameOf = (e: object) => String((e as Json).subscriptionName ?? (e as Json).name);
      const runtimeByName = new Map(runtimes.map((r) => [nameOf(r), runtimeView(r)]));
      const rows: Entity[] = props.map((p) => ({ ...plain(p), runtime: runtimeByName.get(nameOf(p)) ?? {} }));
      ctx.print(rows, (r) => entityTable(kind, r));
    });

  const remove = new Command('delete')
    .description(`delete a ${kind} and its messages`)
    .arguments(args)
    .action(async (...a: unknown[]) => {
      const ctx = contextOf(a.at(-1) as Command, cli);
      const n = namesOf(a);
      await k.remove(ctx.admin(), n);
      ctx.print({ deleted: label(n) }, () => `deleted ${kind} ${label(n)}\n`);
    });

  return group.addCommand(create).addCommand(show).addCommand(list).addCommand(update).addCommand(remove);
}

/** Rule filter and action from flags, in the SDK's shapes: one of --sql, correlation flags, --true, --false. */
function ruleParts(o: Json): { filter?: SqlRuleFilter | CorrelationRuleFilter; action?: SqlRuleAction } {
  const correlationKeys = ['correlationId', 'messageId', 'to', 'replyTo', 'subject', 'sessionId', 'replyToSessionId', 'contentType'] as const;
  const correlation: CorrelationRuleFilter = {};
  for (const key of correlationKeys) if (o[key] !== undefined) correlation[key] = o[key] as string;
  const props = (o.property as string[] | undefined) ?? [];
  if (props.length) correlation.applicationProperties = Object.fromEntries(props.map(splitPair));
  const hasCorrelation = Object.keys(correlation).length > 0;
  const kinds = [o.sql !== undefined, hasCorrelation, o.true === true, o.false === true].filter(Boolean).length;
  if (kinds > 1)
    throw usageError('a rule has one filter', 'give --sql, or correlation flags (--correlation-id, --subject, --property ...), or --true, or --false');
  // TrueFilter and FalseFilter are SQL filters in Service Bus ("1=1", "1=0").
  const filter: SqlRuleFilter | CorrelationRuleFilter | undefined =
    o.sql !== undefined
      ? { sqlExpression: o.sql as string }
      : hasCorrelation
        ? correlation
        : o.true === true
          ? { sqlExpression: '1=1' }
          : o.false === true
            ? { sqlExpression: '1=0' }
            : undefined;
  return { ...(filter ? { filter } : {}), ...(o.action !== undefined ? { action: { sqlExpression: o.action as string } } : {}) };
}

export function splitPair(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw usageError(`"${text}" is not key=value`, 'write --property name=value');
  return [text.slice(0, eq), text.slice(eq + 1)];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function ruleFilterOptions(command: Command): Command {
  return command
    .option('--sql <expression>', 'SQL filter, e.g. "color = \'red\'"')
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
    .option('--action <sql>', 'SQL action, e.g. "SET priority = \'high\'"');
}

function ruleCommands(cli: CliEnv): Command {
  const group = new Command('rule').description('manage the rules (filters) of a subscription');
  // Every subscription starts with the rule `$Default`; other names follow the entity rules.
  const ruleName = (rule: string) => (rule === '$Default' ? rule : checkName(rule, 'rule'));
  const names = (topic: string, sub: string) => [checkName(topic, 'topic'), checkName(sub, 'subscription')] as const;
  const showRule = (r: object) => record(plain(r));
  const rulesTable = (rows: Json[]) =>
    rows.length === 0
      ? 'no rules\n'
      : table(rows, [
          { header: 'NAME', value: (r) => r.name },
          { header: 'FILTER', value: (r) => r.filter, max: 60 },
          { header: 'ACTION', value: (r) => (Object.keys((r.action as object | undefined) ?? {}).length ? r.action : ''), max: 40 },
        ]);

  group.addCommand(
    ruleFilterOptions(new Command('create').description('add a rule to a subscription; fails if it exists').arguments('<topic> <subscription> <rule>')).action(
      async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        const [t, s] = names(topic, sub);
        const { filter, action } = ruleParts(command.opts());
        const admin = ctx.admin();
        const created = action
          ? await admin.createRule(t, s, ruleName(rule), filter ?? { sqlExpression: '1=1' }, action)
          : await admin.createRule(t, s, ruleName(rule), filter ?? { sqlExpression: '1=1' });
        ctx.print(plain(created), (r) => `created rule ${rule}\n${showRule(r)}`);
      },
    ),
  );
  group.addCommand(
    ruleFilterOptions(new Command('update').description("replace a rule's filter or action").arguments('<topic> <subscription> <rule>')).action(
      async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        const [t, s] = names(topic, sub);
        const { filter, action } = ruleParts(command.opts());
        if (!filter && !action) throw usageError('nothing to update', 'give a filter (--sql, --correlation-id, ...) or --action');
        const admin = ctx.admin();
        const current = await admin.getRule(t, s, ruleName(rule));
        const updated = await admin.updateRule(
          t,
          s,
          Object.assign(current, filter ? { filter } : {}, action ? { action } : {}) as RuleProperties & typeof current,
        );
        ctx.print(plain(updated), (r) => `updated rule ${rule}\n${showRule(r)}`);
      },
    ),
  );
  group.addCommand(
    new Command('show')
      .arguments('<topic> <subscription> <rule>')
      .description("a rule's filter and action")
      .action(async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        ctx.print(plain(await ctx.admin().getRule(...names(topic, sub), ruleName(rule))), showRule);
      }),
  );
  group.addCommand(
    new Command('list')
      .arguments('<topic> <subscription>')
      .description('the rules of a subscription')
      .action(async (topic: string, sub: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        ctx.print((await all(ctx.admin().listRules(...names(topic, sub)))).map(plain), rulesTable);
      }),
  );
  group.addCommand(
    new Command('delete')
      .arguments('<topic> <subscription> <rule>')
      .description('remove a rule')
      .action(async (topic: string, sub: string, rule: string, _o: unknown, command: Command) => {
        const ctx = contextOf(command, cli);
        await ctx.admin().deleteRule(...names(topic, sub), ruleName(rule));
        ctx.print({ deleted: rule }, () => `deleted rule ${rule}\n`);
      }),
  );
  return group;
}

export function entityGroups(cli: CliEnv): Command[] {
  return [entityCommands(cli, 'queue'), entityCommands(cli, 'topic'), entityCommands(cli, 'subscription'), ruleCommands(cli)];
}
