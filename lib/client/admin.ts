/**
 * ServiceBusAdministrationClient over Sluice's management routes (docs/http-api.md, "Management"), with
 * the SDK's method names, property names and value formats. SDK options Sluice does not
 * store (userMetadata, enableBatchedOperations, maxMessageSizeInKilobytes, supportOrdering,
 * enableExpress, authorizationRules) are accepted and reported with the SDK's defaults.
 * Like the SDK's, its errors are RestError with `statusCode` and the ATOM error code names.
 */
import type {
  CorrelationRuleFilter,
  CreateQueueOptions,
  CreateSubscriptionOptions,
  CreateTopicOptions,
  EntitiesResponse,
  EntityStatus,
  HttpResponse,
  NamespaceProperties,
  OperationOptions,
  QueueProperties,
  QueueRuntimeProperties,
  RuleProperties,
  ServiceBusAdministrationClientOptions,
  SqlRuleAction,
  SqlRuleFilter,
  SubscriptionProperties,
  SubscriptionRuntimeProperties,
  TopicProperties,
  TopicRuntimeProperties,
  WithResponse,
} from './admin-types.js';
import { parseServiceBusConnectionString, requestEndpoint } from './connection-string.js';
import { AzureNamedKeyCredential, AzureSASCredential, isNamedKeyCredential, isSASCredential } from './credentials.js';
import { isServiceBusError } from './errors.js';
import { pagedIterator, type PagedAsyncIterableIterator, type PageSettings } from './paging.js';
import { HttpTransport, segment, type HttpRequest } from './transport.js';

/** .NET TimeSpan.MaxValue: how Service Bus and the SDK write "unlimited". */
export const UNLIMITED_DURATION = 'P10675199DT2H48M5.4775807S';

/**
 * The error the administration client throws, shaped as @azure/core-rest-pipeline's `RestError`:
 * `statusCode` is the broker's HTTP status and `code` the SDK's name for it
 * (`MessageEntityNotFoundError` 404, `MessageEntityAlreadyExistsError` 409 on create,
 * `UnauthorizedRequestError` 401/403, `QuotaExceededError`, `ServerBusyError` 429/503, else
 * `ServiceError`).
 */
export class RestError extends Error {
  /** Always `"RestError"`. */
  override name = 'RestError';
  /**
   * Creates a RestError.
   *
   * @param message - What went wrong, as the broker said it.
   * @param code - The SDK's error code (`MessageEntityNotFoundError`, ...).
   * @param statusCode - The HTTP status of the response.
   * @param details - Anything more the broker returned.
   */
  constructor(
    message: string,
    /** The SDK's error code: `MessageEntityNotFoundError`, `MessageEntityAlreadyExistsError`, ... */
    readonly code: string,
    /**
     * The HTTP status code of the request (if applicable.)
     */
    readonly statusCode: number,
    /**
     * Bonus property set by the throw site.
     */
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** Status to the SDK's ATOM error codes (its `getErrorCode`). */
function restCodeOf(status: number, method: string, message: string): string {
  if (status === 401) return 'UnauthorizedRequestError';
  if (status === 404) return 'MessageEntityNotFoundError';
  if (status === 409) return method === 'PUT' ? 'MessageEntityAlreadyExistsError' : 'ServiceError';
  if (status === 403) return /quota/i.test(message) ? 'QuotaExceededError' : 'UnauthorizedRequestError';
  if (status === 429 || status === 503) return 'ServerBusyError';
  return 'ServiceError';
}

type Json = Record<string, unknown>;

const durationOut = (v: unknown): string => (typeof v === 'string' ? v : UNLIMITED_DURATION);
const durationIn = (v: string | undefined): string | null | undefined => (v === undefined ? undefined : v === UNLIMITED_DURATION ? null : v);
const date = (v: unknown) => new Date(typeof v === 'string' ? v : 0);
/** `sb://ns/queue`, `https://ns/queue` or `queue` to the broker's `queue`. */
const forwardIn = (v: string | undefined) => (v === undefined ? undefined : v ? v.replace(/^[a-z]+:\/\/[^/]+\//i, '') : null);
const defined = (o: Json): Json => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
const optional = <K extends string>(key: K, v: unknown): Partial<Record<K, string>> => (typeof v === 'string' && v ? ({ [key]: v } as Record<K, string>) : {});

/** What every entity reports the same way, and the SDK's fields Sluice has no use for. */
function entityOut(e: Json) {
  return {
    defaultMessageTimeToLive: durationOut(e.defaultMessageTimeToLive),
    autoDeleteOnIdle: durationOut(e.autoDeleteOnIdle),
    status: e.status as EntityStatus,
    enableBatchedOperations: true,
    userMetadata: '',
    availabilityStatus: 'Available' as const,
  };
}

/** What the entities a sender names (queues and topics) share. */
function sendTargetOut(e: Json) {
  return {
    maxSizeInMegabytes: e.maxSizeInMegabytes as number,
    requiresDuplicateDetection: e.requiresDuplicateDetection as boolean,
    duplicateDetectionHistoryTimeWindow: e.duplicateDetectionHistoryTimeWindow as string,
    enablePartitioning: e.enablePartitioning as boolean,
    enableExpress: false,
    maxMessageSizeInKilobytes: 256,
    authorizationRules: [],
  };
}

/** What the entities a receiver reads (queues and subscriptions) share. */
function receiverOut(e: Json) {
  return {
    lockDuration: e.lockDuration as string,
    requiresSession: e.requiresSession as boolean,
    deadLetteringOnMessageExpiration: e.deadLetteringOnMessageExpiration as boolean,
    maxDeliveryCount: e.maxDeliveryCount as number,
    ...optional('forwardTo', e.forwardTo),
    ...optional('forwardDeadLetteredMessagesTo', e.forwardDeadLetteredMessagesTo),
  };
}

type EntityIn = Pick<CreateTopicOptions, 'defaultMessageTimeToLive' | 'autoDeleteOnIdle' | 'status'>;
type SendTargetIn = Pick<
  CreateTopicOptions,
  'requiresDuplicateDetection' | 'duplicateDetectionHistoryTimeWindow' | 'maxSizeInMegabytes' | 'enablePartitioning'
>;
type ReceiverIn = Pick<
  CreateSubscriptionOptions,
  'lockDuration' | 'maxDeliveryCount' | 'deadLetteringOnMessageExpiration' | 'requiresSession' | 'forwardTo' | 'forwardDeadLetteredMessagesTo'
>;

const entityIn = (o: EntityIn): Json => ({
  defaultMessageTimeToLive: durationIn(o.defaultMessageTimeToLive),
  autoDeleteOnIdle: durationIn(o.autoDeleteOnIdle),
  status: o.status,
});

const sendTargetIn = (o: SendTargetIn): Json => ({
  requiresDuplicateDetection: o.requiresDuplicateDetection,
  duplicateDetectionHistoryTimeWindow: o.duplicateDetectionHistoryTimeWindow,
  maxSizeInMegabytes: o.maxSizeInMegabytes,
  enablePartitioning: o.enablePartitioning,
});

const receiverIn = (o: ReceiverIn): Json => ({
  lockDuration: o.lockDuration,
  maxDeliveryCount: o.maxDeliveryCount,
  deadLetteringOnMessageExpiration: o.deadLetteringOnMessageExpiration,
  requiresSession: o.requiresSession,
  forwardTo: forwardIn(o.forwardTo),
  forwardDeadLetteredMessagesTo: forwardIn(o.forwardDeadLetteredMessagesTo),
});

function queueOut(e: Json): QueueProperties {
  return { name: e.name as string, ...entityOut(e), ...sendTargetOut(e), ...receiverOut(e) };
}

function queueIn(o: Partial<QueueProperties> | CreateQueueOptions): Json {
  return defined({ ...entityIn(o), ...sendTargetIn(o), ...receiverIn(o) });
}

function topicOut(e: Json): TopicProperties {
  return { name: e.name as string, ...entityOut(e), ...sendTargetOut(e), supportOrdering: true };
}

function topicIn(o: Partial<TopicProperties> | CreateTopicOptions): Json {
  return defined({ ...entityIn(o), ...sendTargetIn(o) });
}

function subscriptionOut(e: Json): SubscriptionProperties {
  return {
    subscriptionName: e.name as string,
    topicName: e.topicName as string,
    ...entityOut(e),
    ...receiverOut(e),
    deadLetteringOnFilterEvaluationExceptions: e.deadLetteringOnFilterEvaluationExceptions as boolean,
  };
}

function subscriptionIn(o: Partial<SubscriptionProperties> | CreateSubscriptionOptions): Json {
  return defined({ ...entityIn(o), ...receiverIn(o), deadLetteringOnFilterEvaluationExceptions: o.deadLetteringOnFilterEvaluationExceptions });
}

const runtimeOf = (e: Json) => (e.runtime ?? {}) as Record<string, number | string>;

function queueRuntimeOut(e: Json): QueueRuntimeProperties {
  const r = runtimeOf(e);
  return {
    name: e.name as string,
    createdAt: date(r.createdAt),
    modifiedAt: date(r.updatedAt),
    accessedAt: date(r.accessedAt),
    totalMessageCount: Number(r.totalMessageCount ?? 0),
    activeMessageCount: Number(r.activeMessageCount ?? 0),
    deadLetterMessageCount: Number(r.deadLetterMessageCount ?? 0),
    scheduledMessageCount: Number(r.scheduledMessageCount ?? 0),
    transferMessageCount: 0,
    transferDeadLetterMessageCount: Number(r.transferDeadLetterMessageCount ?? 0),
    sizeInBytes: Number(r.sizeInBytes ?? 0),
  };
}

function subscriptionRuntimeOut(e: Json): SubscriptionRuntimeProperties {
  const q = queueRuntimeOut(e);
  return {
    subscriptionName: e.name as string,
    topicName: e.topicName as string,
    totalMessageCount: q.totalMessageCount ?? 0,
    activeMessageCount: q.activeMessageCount,
    deadLetterMessageCount: q.deadLetterMessageCount,
    transferMessageCount: 0,
    transferDeadLetterMessageCount: q.transferDeadLetterMessageCount,
    createdAt: q.createdAt,
    modifiedAt: q.modifiedAt,
    accessedAt: q.accessedAt,
  };
}

function topicRuntimeOut(e: Json, subscriptionCount?: number): TopicRuntimeProperties {
  const r = runtimeOf(e);
  return {
    name: e.name as string,
    sizeInBytes: Number(r.sizeInBytes ?? 0),
    ...(subscriptionCount === undefined ? {} : { subscriptionCount }),
    scheduledMessageCount: Number(r.scheduledMessageCount ?? 0),
    createdAt: date(r.createdAt),
    modifiedAt: date(r.updatedAt),
    accessedAt: date(r.accessedAt),
  };
}

/**
 * SQL parameters as the broker takes them (Service Bus's SqlFilter.Parameters): the broker
 * binds them and answers them back, so a rule reads as it was written. The SDK accepts names
 * with or without `@`; Service Bus's are `@name`.
 */
function parametersIn(parameters?: { [key: string]: string | number | boolean }): Json | undefined {
  if (!parameters || Object.keys(parameters).length === 0) return undefined;
  return Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k.startsWith('@') ? k : `@${k}`, v]));
}

const sqlIn = (sql: string, parameters?: { [key: string]: string | number | boolean }): Json => {
  const bound = parametersIn(parameters);
  return bound ? { sql, parameters: bound } : { sql };
};

function isSqlFilter(f: SqlRuleFilter | CorrelationRuleFilter): f is SqlRuleFilter {
  return typeof (f as SqlRuleFilter).sqlExpression === 'string';
}

function filterIn(filter: SqlRuleFilter | CorrelationRuleFilter): Json {
  if (isSqlFilter(filter)) {
    const sql = filter.sqlExpression.trim();
    if (/^1\s*=\s*1$/.test(sql)) return { true: {} };
    if (/^1\s*=\s*0$/.test(sql)) return { false: {} };
    return sqlIn(sql, filter.sqlParameters);
  }
  const { applicationProperties, ...system } = filter;
  const properties: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(applicationProperties ?? {})) properties[k] = v instanceof Date ? v.toISOString() : v;
  return { correlation: defined({ ...system, ...(applicationProperties ? { properties } : {}) }) };
}

function ruleOut(r: Json): RuleProperties {
  const f = r.filter as Json;
  let filter: SqlRuleFilter | CorrelationRuleFilter;
  if ('sql' in f)
    filter = { sqlExpression: f.sql as string, ...(f.parameters ? { sqlParameters: f.parameters as Record<string, string | number | boolean> } : {}) };
  else if ('true' in f) filter = { sqlExpression: '1=1' };
  else if ('false' in f) filter = { sqlExpression: '1=0' };
  else {
    const { properties, ...system } = f.correlation as Json;
    filter = { ...(system as CorrelationRuleFilter), applicationProperties: (properties ?? {}) as Record<string, string | number | boolean> };
  }
  const action = r.action as Json | null;
  const actionOut = action?.sql
    ? { sqlExpression: action.sql as string, ...(action.parameters ? { sqlParameters: action.parameters as Record<string, string | number | boolean> } : {}) }
    : {};
  return { name: r.name as string, filter, action: actionOut };
}

function actionIn(action: SqlRuleAction | undefined): Json | undefined {
  if (!action?.sqlExpression) return undefined;
  return sqlIn(action.sqlExpression, action.sqlParameters);
}

const entityPath = {
  queue: (q: string) => `queues/${segment(q)}`,
  topic: (t: string) => `topics/${segment(t)}`,
  subscription: (t: string, s: string) => `topics/${segment(t)}/subscriptions/${segment(s)}`,
  rule: (t: string, s: string, r: string) => `topics/${segment(t)}/subscriptions/${segment(s)}/rules/${segment(r)}`,
};

/**
 * All operations return promises that resolve to an object that has the relevant output.
 * These objects also have a property called `_response` that you can use if you want to
 * access the direct response from the service.
 */
export class ServiceBusAdministrationClient {
  private readonly transport: HttpTransport;

  /**
   * Creates an administration client from a connection string, as `sluice` prints it and `npm start`
   * writes it: `Endpoint=https://...;SharedAccessKeyName=...;SharedAccessKey=...` (or
   * `SharedAccessSignature=...`). An `sb://host/` endpoint means `https://host`; an `http://` or
   * `https://` endpoint is used as given. The management calls need a key with Manage rights.
   *
   * @param connectionString - The namespace's connection string.
   * @param options - `retryOptions` for the HTTP calls; the SDK's pipeline options (`userAgentOptions`,
   * `serviceVersion`, ...) are accepted and ignored.
   * @throws TypeError when the connection string lacks an endpoint or a key.
   */
  constructor(connectionString: string, options?: ServiceBusAdministrationClientOptions);
  /**
   * Creates an administration client from the deployment's endpoint and a credential.
   *
   * @param fullyQualifiedNamespace - The deployment's host (called over HTTPS) or its URL, such as
   * `http://127.0.0.1:4280` for `npm start`.
   * @param credential - An `AzureNamedKeyCredential` (key name and key; Manage rights for these calls) or
   * an `AzureSASCredential` (a signed token). Azure AD `TokenCredential`s are not supported.
   * @param options - `retryOptions` for the HTTP calls; the SDK's pipeline options are accepted and ignored.
   */
  constructor(fullyQualifiedNamespace: string, credential: AzureNamedKeyCredential | AzureSASCredential, options?: ServiceBusAdministrationClientOptions);
  constructor(
    connectionStringOrNamespace: string,
    credentialOrOptions?: AzureNamedKeyCredential | AzureSASCredential | ServiceBusAdministrationClientOptions,
    maybeOptions?: ServiceBusAdministrationClientOptions,
  ) {
    if (isNamedKeyCredential(credentialOrOptions) || isSASCredential(credentialOrOptions)) {
      this.transport = new HttpTransport(connectionStringOrNamespace, credentialOrOptions, transportOptions(maybeOptions));
    } else {
      const cs = parseServiceBusConnectionString(connectionStringOrNamespace);
      const credential = cs.sharedAccessSignature
        ? new AzureSASCredential(cs.sharedAccessSignature)
        : new AzureNamedKeyCredential(cs.sharedAccessKeyName!, cs.sharedAccessKey!);
      this.transport = new HttpTransport(requestEndpoint(cs), credential, transportOptions(credentialOrOptions));
    }
  }

  private async call<T extends object>(req: HttpRequest): Promise<WithResponse<T> & { _body: Json }> {
    try {
      const res = await this.transport.request<Json>(req);
      const _response: HttpResponse = {
        request: { url: this.transport.baseUrl + req.path, method: req.method },
        status: res.status,
        headers: { get: () => undefined },
      };
      return { _response, _body: res.body ?? {} } as WithResponse<T> & { _body: Json };
    } catch (error) {
      if (isServiceBusError(error) && error.info?.status) {
        throw new RestError(error.message, restCodeOf(error.info.status, req.method, error.message), error.info.status, error.info);
      }
      throw error;
    }
  }

  private async entity<T extends object>(
    method: HttpRequest['method'],
    path: string,
    map: (e: Json) => T,
    options?: OperationOptions,
    body?: Json,
  ): Promise<WithResponse<T>> {
    const res = await this.call<T>({
      method,
      path: `/${path}`,
      audience: path,
      idempotent: method !== 'PUT' || body === undefined,
      body,
      abortSignal: options?.abortSignal,
    });
    return Object.assign(map(res._body), { _response: res._response });
  }

  private async create<T extends object>(path: string, body: Json, map: (e: Json) => T, options?: OperationOptions): Promise<WithResponse<T>> {
    // A create that already exists is refused as the SDK's is: the broker's PUT would update.
    const exists = await this.exists(path, options);
    if (exists) throw new RestError(`The messaging entity '${decodeURIComponent(path)}' already exists.`, 'MessageEntityAlreadyExistsError', 409);
    const res = await this.call<T>({ method: 'PUT', path: `/${path}`, audience: path, idempotent: true, body, abortSignal: options?.abortSignal });
    return Object.assign(map(res._body), { _response: res._response });
  }

  private async update<T extends object>(path: string, body: Json, map: (e: Json) => T, options?: OperationOptions): Promise<WithResponse<T>> {
    if (!(await this.exists(path, options)))
      throw new RestError(`The messaging entity '${decodeURIComponent(path)}' could not be found.`, 'MessageEntityNotFoundError', 404);
    const res = await this.call<T>({ method: 'PUT', path: `/${path}`, audience: path, idempotent: true, body, abortSignal: options?.abortSignal });
    return Object.assign(map(res._body), { _response: res._response });
  }

  private async remove(path: string, options?: OperationOptions): Promise<WithResponse<{}>> {
    return this.call<{}>({ method: 'DELETE', path: `/${path}`, audience: path, idempotent: false, abortSignal: options?.abortSignal }).then(
      ({ _response }) => ({ _response }),
    );
  }

  private async exists(path: string, options?: OperationOptions): Promise<boolean> {
    const res = await this.transport.request({
      method: 'GET',
      path: `/${path}`,
      audience: path,
      idempotent: true,
      accept: [404],
      abortSignal: options?.abortSignal,
    });
    return res.status !== 404;
  }

  private list<T extends object>(listPath: string, map: (e: Json) => T, options?: OperationOptions): PagedAsyncIterableIterator<T, EntitiesResponse<T>> {
    return pagedIterator<T, EntitiesResponse<T>>(async (settings: PageSettings) => {
      const res = await this.call<{ items: Json[]; next: string | null }>({
        method: 'GET',
        path: `/${listPath}`,
        query: { top: settings.maxPageSize ? Math.min(100, settings.maxPageSize) : undefined, next: settings.continuationToken },
        audience: listPath.replace(/\/subscriptions$/, ''),
        idempotent: true,
        abortSignal: options?.abortSignal,
      });
      const items = ((res._body.items ?? []) as Json[]).map(map) as EntitiesResponse<T>;
      items._response = res._response;
      const next = res._body.next;
      if (typeof next === 'string' && next) items.continuationToken = next;
      return items;
    });
  }

  /**
   * Returns an object representing the metadata related to a service bus namespace.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @returns The namespace's name, SKU (`Standard`) and times, with the HTTP response in `_response`.
   *
   */
  async getNamespaceProperties(operationOptions?: OperationOptions): Promise<WithResponse<NamespaceProperties>> {
    // Sluice keeps no namespace record; a cheap authorized read proves the key and the endpoint.
    const res = await this.call<NamespaceProperties>({
      method: 'GET',
      path: '/queues',
      query: { top: 1 },
      audience: '',
      idempotent: true,
      abortSignal: operationOptions?.abortSignal,
    });
    const host = this.transport.host;
    return {
      createdAt: new Date(0),
      modifiedAt: new Date(0),
      messagingSku: 'Standard',
      name: host.split('.')[0]!.split(':')[0]!,
      messagingUnits: undefined,
      _response: res._response,
    };
  }

  /**
   * Creates a queue with given name, configured using the given options
   * @param options - Options to configure the Queue being created(For example, you can configure a queue to support partitions or sessions)
   *  and the operation options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param queueName - Name of the queue.
   * @returns The queue as created, with its properties and defaults, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityAlreadyExistsError` when requested messaging entity already exists,
   * @throws `RestError` with code `QuotaExceededError` when requested operation fails due to quote limits exceeding from service side,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  createQueue(queueName: string, options?: CreateQueueOptions): Promise<WithResponse<QueueProperties>> {
    return this.create(entityPath.queue(queueName), queueIn(options ?? {}), queueOut, options);
  }
  /**
   * Returns an object representing the Queue and its properties.
   * If you want to get the Queue runtime info like message count details, use `getQueueRuntimeProperties` API.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param queueName - Name of the queue.
   * @returns The queue's properties, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  getQueue(queueName: string, operationOptions?: OperationOptions): Promise<WithResponse<QueueProperties>> {
    return this.entity('GET', entityPath.queue(queueName), queueOut, operationOptions);
  }
  /**
   * Returns an object representing the Queue runtime info like message count details.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param queueName - Name of the queue.
   * @returns The queue's message counts, size and times, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  getQueueRuntimeProperties(queueName: string, operationOptions?: OperationOptions): Promise<WithResponse<QueueRuntimeProperties>> {
    return this.entity('GET', entityPath.queue(queueName), queueRuntimeOut, operationOptions);
  }
  /**
   * Returns an async iterable iterator to list all the queues.
   *
   * .byPage() returns an async iterable iterator to list the queues in pages.
   *
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listQueues(options?: OperationOptions): PagedAsyncIterableIterator<QueueProperties, EntitiesResponse<QueueProperties>> {
    return this.list('queues', queueOut, options);
  }
  /**
   * Returns an async iterable iterator to list runtime info of the queues.
   *
   * .byPage() returns an async iterable iterator to list runtime info of the queues in pages.
   *
   *
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listQueuesRuntimeProperties(options?: OperationOptions): PagedAsyncIterableIterator<QueueRuntimeProperties, EntitiesResponse<QueueRuntimeProperties>> {
    return this.list('queues', queueRuntimeOut, options);
  }
  /**
   * Updates the queue based on the queue properties provided.
   * All queue properties must be set even though only a subset of them are actually updatable.
   * Therefore, the suggested flow is to use the output from `getQueue()`, update the desired properties in it, and then pass the modified object to `updateQueue()`.
   *
   * The properties that cannot be updated are marked as readonly in the `QueueProperties` interface.
   *
   * @param queue - Object representing the properties of the queue and the raw response.
   * `requiresSession`, `requiresDuplicateDetection`, `enablePartitioning`, and `name` can't be updated after creating the queue.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @returns The queue as updated, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  updateQueue(queue: WithResponse<QueueProperties>, operationOptions?: OperationOptions): Promise<WithResponse<QueueProperties>> {
    return this.update(entityPath.queue(queue.name), queueIn(queue), queueOut, operationOptions);
  }
  /**
   * Deletes a queue.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param queueName - Name of the queue.
   * @returns The HTTP response, in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  deleteQueue(queueName: string, operationOptions?: OperationOptions): Promise<WithResponse<{}>> {
    return this.remove(entityPath.queue(queueName), operationOptions);
  }
  /**
   * Checks whether a given queue exists or not.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param queueName - Name of the queue.
   * @returns Whether the queue exists.
   */
  queueExists(queueName: string, operationOptions?: OperationOptions): Promise<boolean> {
    return this.exists(entityPath.queue(queueName), operationOptions);
  }

  /**
   * Creates a topic with given name, configured using the given options
   * @param options - Options to configure the Topic being created(For example, you can configure a topic to support partitions)
   * and the operation options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param topicName - Name of the topic.
   * @returns The topic as created, with its properties and defaults, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityAlreadyExistsError` when requested messaging entity already exists,
   * @throws `RestError` with code `QuotaExceededError` when requested operation fails due to quote limits exceeding from service side,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  createTopic(topicName: string, options?: CreateTopicOptions): Promise<WithResponse<TopicProperties>> {
    return this.create(entityPath.topic(topicName), topicIn(options ?? {}), topicOut, options);
  }
  /**
   * Returns an object representing the Topic and its properties.
   * If you want to get the Topic runtime info like subscription count details, use `getTopicRuntimeProperties` API.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param topicName - Name of the topic.
   * @returns The topic's properties, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  getTopic(topicName: string, operationOptions?: OperationOptions): Promise<WithResponse<TopicProperties>> {
    return this.entity('GET', entityPath.topic(topicName), topicOut, operationOptions);
  }
  /**
   * Returns an object representing the Topic runtime info like subscription count.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param topicName - Name of the topic.
   * @returns The topic's counts, size and times, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  async getTopicRuntimeProperties(topicName: string, operationOptions?: OperationOptions): Promise<WithResponse<TopicRuntimeProperties>> {
    const topic = await this.entity('GET', entityPath.topic(topicName), (e) => e, operationOptions);
    let subscriptionCount = 0;
    for await (const page of this.listSubscriptions(topicName, operationOptions).byPage({ maxPageSize: 100 })) subscriptionCount += page.length;
    return Object.assign(topicRuntimeOut(topic, subscriptionCount), { _response: topic._response });
  }
  /**
   * Returns an async iterable iterator to list all the topics.
   *
   * .byPage() returns an async iterable iterator to list the topics in pages.
   *
   *
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listTopics(options?: OperationOptions): PagedAsyncIterableIterator<TopicProperties, EntitiesResponse<TopicProperties>> {
    return this.list('topics', topicOut, options);
  }
  /**
   * Returns an async iterable iterator to list runtime info of the topics.
   *
   * .byPage() returns an async iterable iterator to list runtime info of the topics in pages.
   *
   *
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listTopicsRuntimeProperties(options?: OperationOptions): PagedAsyncIterableIterator<TopicRuntimeProperties, EntitiesResponse<TopicRuntimeProperties>> {
    return this.list('topics', (e) => topicRuntimeOut(e), options);
  }
  /**
   * Updates the topic based on the topic properties provided.
   * All topic properties must be set even though only a subset of them are actually updatable.
   * Therefore, the suggested flow is to use the output from `getTopic()`, update the desired properties in it, and then pass the modified object to `updateTopic()`.
   *
   * The properties that cannot be updated are marked as readonly in the `TopicProperties` interface.
   *
   * @param topic - Object representing the properties of the topic and the raw response.
   * `requiresDuplicateDetection`, `enablePartitioning`, and `name` can't be updated after creating the topic.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @returns The topic as updated, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  updateTopic(topic: WithResponse<TopicProperties>, operationOptions?: OperationOptions): Promise<WithResponse<TopicProperties>> {
    return this.update(entityPath.topic(topic.name), topicIn(topic), topicOut, operationOptions);
  }
  /**
   * Deletes a topic.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param topicName - Name of the topic.
   * @returns The HTTP response, in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  deleteTopic(topicName: string, operationOptions?: OperationOptions): Promise<WithResponse<{}>> {
    return this.remove(entityPath.topic(topicName), operationOptions);
  }
  /**
   * Checks whether a given topic exists or not.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param topicName - Name of the topic.
   * @returns Whether the topic exists.
   */
  topicExists(topicName: string, operationOptions?: OperationOptions): Promise<boolean> {
    return this.exists(entityPath.topic(topicName), operationOptions);
  }

  /**
   * Creates a subscription with given name, configured using the given options
   * @param options - Options to configure the Subscription being created(For example, you can configure a Subscription to support partitions or sessions)
   * and the operation options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The subscription as created, with its properties and defaults, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityAlreadyExistsError` when requested messaging entity already exists,
   * @throws `RestError` with code `QuotaExceededError` when requested operation fails due to quote limits exceeding from service side,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  async createSubscription(topicName: string, subscriptionName: string, options?: CreateSubscriptionOptions): Promise<WithResponse<SubscriptionProperties>> {
    const created = await this.create(entityPath.subscription(topicName, subscriptionName), subscriptionIn(options ?? {}), subscriptionOut, options);
    const rule = options?.defaultRuleOptions;
    if (rule) {
      // The SDK's defaultRuleOptions replace $Default with the given rule.
      await this.createRule(topicName, subscriptionName, rule.name, rule.filter ?? { sqlExpression: '1=1' }, rule.action ?? {}, options);
      if (rule.name !== '$Default') await this.deleteRule(topicName, subscriptionName, '$Default', options);
    }
    return created;
  }
  /**
   * Returns an object representing the Subscription and its properties.
   * If you want to get the Subscription runtime info like message count details, use `getSubscriptionRuntimeProperties` API.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The subscription's properties, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  getSubscription(topicName: string, subscriptionName: string, operationOptions?: OperationOptions): Promise<WithResponse<SubscriptionProperties>> {
    return this.entity('GET', entityPath.subscription(topicName, subscriptionName), subscriptionOut, operationOptions);
  }
  /**
   * Returns an object representing the Subscription runtime info like message count details.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The subscription's message counts and times, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  getSubscriptionRuntimeProperties(
    topicName: string,
    subscriptionName: string,
    operationOptions?: OperationOptions,
  ): Promise<WithResponse<SubscriptionRuntimeProperties>> {
    return this.entity('GET', entityPath.subscription(topicName, subscriptionName), subscriptionRuntimeOut, operationOptions);
  }
  /**
   *
   * Returns an async iterable iterator to list all the subscriptions
   * under the specified topic.
   *
   * .byPage() returns an async iterable iterator to list the subscriptions in pages.
   *
   * @param topicName - Name of the topic.
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listSubscriptions(
    topicName: string,
    options?: OperationOptions,
  ): PagedAsyncIterableIterator<SubscriptionProperties, EntitiesResponse<SubscriptionProperties>> {
    return this.list(`${entityPath.topic(topicName)}/subscriptions`, subscriptionOut, options);
  }
  /**
   * Returns an async iterable iterator to list runtime info of the subscriptions
   * under the specified topic.
   *
   * .byPage() returns an async iterable iterator to list runtime info of subscriptions in pages.
   *
   * @param topicName - Name of the topic.
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listSubscriptionsRuntimeProperties(
    topicName: string,
    options?: OperationOptions,
  ): PagedAsyncIterableIterator<SubscriptionRuntimeProperties, EntitiesResponse<SubscriptionRuntimeProperties>> {
    return this.list(`${entityPath.topic(topicName)}/subscriptions`, subscriptionRuntimeOut, options);
  }
  /**
   * Updates the subscription based on the subscription properties provided.
   * All subscription properties must be set even though only a subset of them are actually updatable.
   * Therefore, the suggested flow is to use the output from `getSubscription()`, update the desired properties in it, and then pass the modified object to `updateSubscription()`.
   *
   * The properties that cannot be updated are marked as readonly in the `SubscriptionProperties` interface.
   * @param subscription - Object representing the properties of the subscription and the raw response.
   * `subscriptionName`, `topicName`, and `requiresSession` can't be updated after creating the subscription.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @returns The subscription as updated, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  updateSubscription(subscription: WithResponse<SubscriptionProperties>, operationOptions?: OperationOptions): Promise<WithResponse<SubscriptionProperties>> {
    return this.update(
      entityPath.subscription(subscription.topicName, subscription.subscriptionName),
      subscriptionIn(subscription),
      subscriptionOut,
      operationOptions,
    );
  }
  /**
   * Deletes a subscription.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The HTTP response, in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  deleteSubscription(topicName: string, subscriptionName: string, operationOptions?: OperationOptions): Promise<WithResponse<{}>> {
    return this.remove(entityPath.subscription(topicName, subscriptionName), operationOptions);
  }
  /**
   * Checks whether a given subscription exists in the topic or not.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns Whether the subscription exists.
   */
  subscriptionExists(topicName: string, subscriptionName: string, operationOptions?: OperationOptions): Promise<boolean> {
    return this.exists(entityPath.subscription(topicName, subscriptionName), operationOptions);
  }

  /**
   * Creates a rule with given name, configured using the given options.
   * @param ruleFilter - Defines the filter expression that the rule evaluates.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param ruleName - Name of the rule, under the subscription.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The rule as created, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityAlreadyExistsError` when requested messaging entity already exists,
   * @throws `RestError` with code `QuotaExceededError` when requested operation fails due to quote limits exceeding from service side,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  createRule(
    topicName: string,
    subscriptionName: string,
    ruleName: string,
    ruleFilter: SqlRuleFilter | CorrelationRuleFilter,
    operationOptions?: OperationOptions,
  ): Promise<WithResponse<RuleProperties>>;
  /**
   * Creates a rule with given name, configured using the given options.
   * @param ruleFilter - Defines the filter expression that the rule evaluates.
   * @param ruleAction - The SQL like expression that can be executed on the message should the associated filter apply.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param ruleName - Name of the rule, under the subscription.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The rule as created, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityAlreadyExistsError` when requested messaging entity already exists,
   * @throws `RestError` with code `QuotaExceededError` when requested operation fails due to quote limits exceeding from service side,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  createRule(
    topicName: string,
    subscriptionName: string,
    ruleName: string,
    ruleFilter: SqlRuleFilter | CorrelationRuleFilter,
    ruleAction: SqlRuleAction,
    operationOptions?: OperationOptions,
  ): Promise<WithResponse<RuleProperties>>;
  createRule(
    topicName: string,
    subscriptionName: string,
    ruleName: string,
    ruleFilter: SqlRuleFilter | CorrelationRuleFilter,
    actionOrOptions?: SqlRuleAction | OperationOptions,
    maybeOptions?: OperationOptions,
  ): Promise<WithResponse<RuleProperties>> {
    const isAction = (v: unknown): v is SqlRuleAction => typeof v === 'object' && v !== null && ('sqlExpression' in v || Object.keys(v).length === 0);
    const action = isAction(actionOrOptions) ? actionOrOptions : undefined;
    const options = isAction(actionOrOptions) ? maybeOptions : (actionOrOptions as OperationOptions | undefined);
    return this.create(
      entityPath.rule(topicName, subscriptionName, ruleName),
      defined({ filter: filterIn(ruleFilter), action: actionIn(action) }),
      ruleOut,
      options,
    );
  }
  /**
   * Returns an object representing the Rule with the given name along with all its properties.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param ruleName - Name of the rule, under the subscription.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The rule's filter and action, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  getRule(topicName: string, subscriptionName: string, ruleName: string, operationOptions?: OperationOptions): Promise<WithResponse<RuleProperties>> {
    return this.entity('GET', entityPath.rule(topicName, subscriptionName, ruleName), ruleOut, operationOptions);
  }
  /**
   * Returns an async iterable iterator to list all the rules
   * under the specified subscription.
   *
   * .byPage() returns an async iterable iterator to list the rules in pages.
   *
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listRules(
    topicName: string,
    subscriptionName: string,
    options?: OperationOptions,
  ): PagedAsyncIterableIterator<RuleProperties, EntitiesResponse<RuleProperties>> {
    // The broker answers a subscription's rules in one page (there are few); pages are cut here.
    const path = entityPath.subscription(topicName, subscriptionName);
    return pagedIterator<RuleProperties, EntitiesResponse<RuleProperties>>(async (settings) => {
      const res = await this.call<{ items: Json[] }>({
        method: 'GET',
        path: `/${path}/rules`,
        audience: path,
        idempotent: true,
        abortSignal: options?.abortSignal,
      });
      const all = ((res._body.items ?? []) as Json[]).map(ruleOut);
      const start = Number(settings.continuationToken ?? 0) || 0;
      const end = settings.maxPageSize ? start + settings.maxPageSize : all.length;
      const page = all.slice(start, end) as EntitiesResponse<RuleProperties>;
      page._response = res._response;
      if (end < all.length) page.continuationToken = String(end);
      return page;
    });
  }
  /**
   * Updates properties on the Rule by the given name based on the given options.
   * All rule properties must be set even if one of them is being updated.
   * Therefore, the suggested flow is to use the output from `getRule()`, update the desired properties in it, and then pass the modified object to `updateRule()`.
   *
   * @param rule - Options to configure the Rule being updated and the raw response.
   * For example, you can configure the filter to apply on associated Topic/Subscription.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The rule as updated, with the HTTP response in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  updateRule(
    topicName: string,
    subscriptionName: string,
    rule: WithResponse<RuleProperties>,
    operationOptions?: OperationOptions,
  ): Promise<WithResponse<RuleProperties>> {
    return this.update(
      entityPath.rule(topicName, subscriptionName, rule.name),
      defined({ filter: filterIn(rule.filter), action: actionIn(rule.action) }),
      ruleOut,
      operationOptions,
    );
  }
  /**
   * Deletes a rule.
   * @param operationOptions - The options that can be used to abort, trace and control other configurations on the HTTP request.
   * @param ruleName - Name of the rule, under the subscription.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @returns The HTTP response, in `_response`.
   *
   * Following are errors that can be expected from this operation
   * @throws `RestError` with code `UnauthorizedRequestError` when given request fails due to authorization problems,
   * @throws `RestError` with code `MessageEntityNotFoundError` when requested messaging entity does not exist,
   * @throws `RestError` with code `ServerBusyError` when the request fails due to server being busy,
   * @throws `RestError` with code `ServiceError` when receiving unrecognized HTTP status or for a scenarios such as
   * bad requests or requests resulting in conflicting operation on the server,
   * @throws `RestError` with code and statusCode representing the standard set of REST API errors.
   */
  deleteRule(topicName: string, subscriptionName: string, ruleName: string, operationOptions?: OperationOptions): Promise<WithResponse<{}>> {
    return this.remove(entityPath.rule(topicName, subscriptionName, ruleName), operationOptions);
  }
  /**
   * Checks whether a given rule exists or not.
   *
   * @param ruleName - Name of the rule, under the subscription.
   * @param subscriptionName - Name of the subscription, under `topicName`.
   * @param topicName - Name of the topic.
   * @param operationOptions - Options bag to pass an abort signal.
   * @returns Whether the rule exists.
   */
  ruleExists(topicName: string, subscriptionName: string, ruleName: string, operationOptions?: OperationOptions): Promise<boolean> {
    return this.exists(entityPath.rule(topicName, subscriptionName, ruleName), operationOptions);
  }
}

function transportOptions(options?: ServiceBusAdministrationClientOptions) {
  return { ...(options?.retryOptions ? { retryOptions: options.retryOptions } : {}), ...(options?.fetch ? { fetch: options.fetch } : {}) };
}
