/**
 * The routes only the local runtime serves (`/_local/clock`, `/_local/jobs/{job}`), matched
 * in the route table (lib/api/routes.ts) like the API's.
 *
 * Moving the clock and running jobs is management of the whole namespace, so these routes
 * want what the API wants for it: a token of a namespace rule with Manage (the root key).
 * Otherwise `--host 0.0.0.0` would let anyone on the network use them.
 */
import { authorize, type FindRule, type IsCurrent } from '../../lib/api/authorize.js';
import { routesAt, routeTable, type Operation } from '../../lib/api/routes.js';
import type { OffsetClock } from '../../lib/clock.js';
import { decodeUtf8, parseJsonText } from '../../lib/json.js';
import { MAX_SEQUENCE_TIME_MS } from '../../lib/store/sequence.js';
import { durationToMs } from './duration.js';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-events.js';
import { jobNames, type JobName, type LocalJobs } from './jobs.js';
import type { LocalLogger } from './logger.js';

const localRoutes = routeTable.filter((r) => r.localOnly);

type LocalOperation = Extract<Operation, `local.${string}`>;

export interface LocalRequest {
  method: string;
  /** The path as sent (authorization reads it so), and decoded (routes match it). */
  rawPath: string;
  path: string;
  authorization: string | undefined;
  body: Buffer;
  requestId: string;
}

export interface LocalRoutesOptions {
  clock: OffsetClock;
  /** Keeps the clock's new offset with the data. */
  saveClock: () => void;
  jobs: Pick<LocalJobs, 'run'>;
  rules: { findRule: FindRule; isCurrent: IsCurrent };
  logger: LocalLogger;
}

/** What answers a request to `/_local/...`: a refusal when the token does not allow it, else the route's answer. */
export type LocalRoutes = (request: LocalRequest) => Promise<HttpAnswer>;

export function createLocalRoutes(options: LocalRoutesOptions): LocalRoutes {
  const { clock, logger } = options;
  const operations: Record<LocalOperation, (body: Buffer, requestId: string, job: JobName) => Promise<HttpAnswer>> = {
    'local.getClock': async (_body, requestId) => clockAnswer(clock, requestId),
    'local.advanceClock': async (body, requestId) => advanceClock(clock, options.saveClock, body, requestId),
    'local.runJob': async (_body, requestId, job) => {
      try {
        return jsonAnswer(200, await options.jobs.run(job), requestId);
      } catch (error) {
        logger.error(`job ${job} failed`, error);
        return errorAnswer(500, 'InternalError', `job ${job} failed: ${(error as Error)?.message ?? String(error)}`, requestId);
      }
    },
  };

  async function refusal({ method, rawPath, authorization, requestId }: LocalRequest): Promise<HttpAnswer | undefined> {
    const decision = await authorize({ method, path: rawPath }, authorization, Math.floor(Date.now() / 1000), options.rules.findRule, options.rules.isCurrent);
    if (decision.ok) return undefined;
    if (decision.status === 401) return errorAnswer(401, 'Unauthorized', 'a valid SharedAccessSignature is required', requestId);
    if (decision.status === 400) return errorAnswer(400, 'BadRequest', `path segment ${decision.badName}: is not a name`, requestId);
    return errorAnswer(403, 'Forbidden', 'the token does not grant this operation on this resource', requestId);
  }

  async function route({ method, path, body, requestId }: LocalRequest): Promise<HttpAnswer> {
    const matches = routesAt(path.split('/').slice(1), localRoutes);
    const job = matches[0]?.params.job;
    if (matches.length === 0 || (job !== undefined && !(jobNames as readonly string[]).includes(job))) {
      return job === undefined
        ? errorAnswer(404, 'EntityNotFound', `no local route ${path}`, requestId)
        : errorAnswer(404, 'EntityNotFound', `no job ${job}; jobs are ${jobNames.join(', ')}`, requestId);
    }
    const wanted = method === 'HEAD' ? 'get' : method.toLowerCase();
    const hit = matches.find((x) => x.route.method === wanted);
    if (!hit) {
      const allowed = matches.map((x) => x.route.method.toUpperCase()).join(', ');
      const answer = errorAnswer(405, 'BadRequest', `${method} is not allowed on ${path}; use ${allowed}`, requestId);
      answer.headers.allow = allowed;
      return answer;
    }
    return operations[hit.route.operation as LocalOperation](body, requestId, job as JobName);
  }

  return async (request) => (await refusal(request)) ?? (await route(request));
}

const clockAnswer = (clock: OffsetClock, requestId: string) => jsonAnswer(200, { now: new Date(clock.now()).toISOString() }, requestId);

/** `POST /_local/clock` with `{"advance": "PT6M"}`: moves the broker's clock forward and keeps the move. */
function advanceClock(clock: OffsetClock, saveClock: () => void, body: Buffer, requestId: string): HttpAnswer {
  let input: unknown;
  try {
    // The API's own body reader: bytes that are not UTF-8 are refused, not replaced (B2).
    input = body.length > 0 ? parseJsonText(decodeUtf8(body)) : {};
  } catch (error) {
    return errorAnswer(400, 'BadRequest', (error as Error).message, requestId);
  }
  const advance = (input as { advance?: unknown } | null)?.advance;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return errorAnswer(400, 'BadRequest', 'the body must be an object such as {"advance": "PT6M"}', requestId);
  }
  const unknownFields = Object.keys(input).filter((k) => k !== 'advance');
  if (unknownFields.length > 0) {
    return errorAnswer(400, 'BadRequest', `unknown field ${unknownFields[0]}; only advance is accepted`, requestId);
  }
  if (typeof advance !== 'string') {
    return errorAnswer(400, 'BadRequest', 'advance is required: an ISO 8601 duration such as PT6M', requestId);
  }
  let ms: number;
  try {
    ms = durationToMs(advance, clock.now());
  } catch (error) {
    return errorAnswer(400, 'BadRequest', `advance: ${(error as Error).message}`, requestId);
  }
  // Sequence numbers carry the time (S2): a clock past their layout would stop the broker.
  if (clock.now() + ms > MAX_SEQUENCE_TIME_MS) {
    return errorAnswer(
      400,
      'BadRequest',
      `advance: the clock may not pass ${new Date(MAX_SEQUENCE_TIME_MS).toISOString()}, the last time a sequence number can hold`,
      requestId,
    );
  }
  clock.advance(ms);
  saveClock();
  return clockAnswer(clock, requestId);
}
