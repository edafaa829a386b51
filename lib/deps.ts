import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from './clock.js';
import { noteUnsureAttempts } from './call-attempts.js';

/** What every handler needs; Lambda builds it from the environment, tests and the local runtime by hand. */
export interface Deps {
  clock: Clock;
  db: DynamoDBDocumentClient;
  tableName: string;
  /**
   * The keys table (authorization rules, lib/store/table.ts `keysTableDefinition`); where
   * absent, the one named after `tableName` (`keysTableNameOf`), as the local runtime and the
   * tests make it. Lambda gets it from KEYS_TABLE_NAME, set only on the functions granted it.
   */
  keysTableName?: string;
  /** The WebSocket URL waiting consumers connect to (H1); undefined when the deployment has none. */
  notificationsUrl?: () => string | undefined;
  /**
   * The message layout new queues and subscriptions get (`SLUICE_NEW_ENTITY_LAYOUT`): `index`
   * for today's `ready` index, `positions` for the positioned layout (design.md, "Which way
   * out") taken by cursor claim, `tickets` for the positioned layout with its heads taken by
   * ticket ("A claim that cannot lose"); absent, `DEFAULT_NEW_ENTITY_LAYOUT`. Each entity keeps
   * the layout it was created with.
   */
  newEntityLayout?: NewEntityLayout;
  /**
   * The clock of the world outside the broker: the one clients mint shared access tokens by
   * (A1's expiry) and API Gateway stamps connections with (H2's subscriptions end with either).
   * Real time where absent. Never the broker's `clock`: a test that moves that forward must not
   * expire the tokens it signed, so a test that means to expire one moves this clock instead.
   */
  wallClock?: Pick<Clock, 'now'>;
}

/** Now by `wallClock`, in whole seconds since the epoch, as a token's expiry (`se`) counts them. */
export const wallSeconds = (deps: Pick<Deps, 'wallClock'>): number => Math.floor((deps.wallClock ?? systemClock).now() / 1000);

/** The message layouts an entity may have (`EntityItem.layout`); absent is today's. */
export const ENTITY_LAYOUTS = ['positions', 'tickets'] as const;
export type EntityLayout = (typeof ENTITY_LAYOUTS)[number];

/** What a deployment may give its new entities: a positioned layout, or `index`, today's `ready` index layout. */
export const NEW_ENTITY_LAYOUTS = ['index', ...ENTITY_LAYOUTS] as const;
export type NewEntityLayout = (typeof NEW_ENTITY_LAYOUTS)[number];

/**
 * The layout new entities get where the deployment names none: ticketed positions, the cheapest
 * a life and the one whose receivers never lose a race (design.md, "Tickets as the default").
 */
export const DEFAULT_NEW_ENTITY_LAYOUT: NewEntityLayout = 'tickets';

/** The environment variable `newEntityLayout` is read from; infra/stack.ts sets it on the functions when `-c newEntityLayout` asks. */
export const NEW_ENTITY_LAYOUT_ENV = 'SLUICE_NEW_ENTITY_LAYOUT';

/** Whether `value` names a layout for new entities: for the environment and for CDK context alike. */
export const isNewEntityLayout = (value: unknown): value is NewEntityLayout => NEW_ENTITY_LAYOUTS.some((layout) => layout === value);

const entityLayoutOf = (text: string | undefined): NewEntityLayout | undefined => {
  if (!text) return undefined;
  if (isNewEntityLayout(text)) return text;
  throw new Error(`${NEW_ENTITY_LAYOUT_ENV} must be empty or ${NEW_ENTITY_LAYOUTS.map((l) => `'${l}'`).join(' or ')}, not '${text}'`);
};

/**
 * The SDK's default logger has an `info` and an `error` that do nothing, yet before each call
 * to them, after every request, the SDK copies the request's input and output field by field
 * to mask sensitive members (a message's item, a page of a Query): a third of the CPU of a
 * PutItem. A logger without them skips that work; the SDK calls its other methods only on
 * trace, debug and warning paths, which stay silent as before. Errors still reach the caller.
 */
const quietLogger = { trace() {}, debug() {}, warn() {} } as unknown as NonNullable<DynamoDBClientConfig['logger']>;

/** A DynamoDB client as every handler uses it (Lambda, the local runtime, the bench's metered one). */
export const dynamoDbClient = (config: DynamoDBClientConfig = {}): DynamoDBClient => new DynamoDBClient({ logger: quietLogger, ...config });

/**
 * The document client every handler calls DynamoDB through, its attempts watched so that a write
 * knows when one of them may have landed unseen (call-attempts.ts).
 */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  noteUnsureAttempts(client);
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
    unmarshallOptions: { wrapNumbers: false },
  });
}

export function depsFromEnv(env: NodeJS.ProcessEnv = process.env): Deps {
  const tableName = env.TABLE_NAME;
  if (!tableName) throw new Error('TABLE_NAME is not set');
  const client = dynamoDbClient(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {});
  return {
    clock: systemClock,
    db: documentClient(client),
    tableName,
    ...(env.KEYS_TABLE_NAME ? { keysTableName: env.KEYS_TABLE_NAME } : {}),
    notificationsUrl: () => env.NOTIFICATIONS_URL || undefined,
    ...layoutFromEnv(env),
  };
}

/** `newEntityLayout` as the environment sets it (`SLUICE_NEW_ENTITY_LAYOUT`), to spread into a `Deps`. */
export function layoutFromEnv(env: NodeJS.ProcessEnv = process.env): Pick<Deps, 'newEntityLayout'> {
  const layout = entityLayoutOf(env[NEW_ENTITY_LAYOUT_ENV]);
  return layout ? { newEntityLayout: layout } : {};
}

/** The keys table of `deps`. */
/** The keys table beside a data table where nothing names it (the local runtime, tests, the bench). */
export const keysTableNameOf = (tableName: string) => `${tableName}-keys`;

export const keysTableOf = (deps: Pick<Deps, 'tableName' | 'keysTableName'>) => deps.keysTableName ?? keysTableNameOf(deps.tableName);

/**
 * Builds the dependencies on first use, so importing a handler module has no side effects.
 * A promise that rejects is forgotten, so the next call makes it again: a check that met a
 * throttle or an IAM policy still propagating on a cold start must not fail every later
 * request of the execution environment.
 */
export function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    if (value !== undefined) return value;
    const made = make();
    value = made;
    if (made instanceof Promise) {
      made.catch(() => {
        if (value === made) value = undefined;
      });
    }
    return made;
  };
}
