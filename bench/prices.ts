/**
 * Scenario 5: the measured figures turned into dollars at on-demand list prices (us-east-1).
 * Every price and assumption is listed here and printed with the result.
 */
export const prices = {
  /** DynamoDB on-demand, per write request unit / read request unit. */
  writeUnit: 0.625 / 1e6,
  readUnit: 0.125 / 1e6,
  /** API Gateway HTTP API, per request (first 300 million a month). */
  httpRequest: 1.0 / 1e6,
  /** Lambda, per invocation, and per GB-second on arm64. */
  lambdaCall: 0.2 / 1e6,
  lambdaGbSecondArm: 0.0000133334,
  lambdaMemoryGb: 256 / 1024,
  /** CloudWatch Logs ingestion per GB (storage of a few MB is negligible). */
  logsIngestPerGb: 0.5,
  /** Azure Service Bus Standard: per million operations, plus the monthly base. */
  serviceBusPerMillionOps: 0.8,
  serviceBusBaseMonthly: 10,
  /** Amazon SQS standard: per million requests (64 KB chunks; a 1 KB message is one). */
  sqsPerMillionRequests: 0.4,
  /** DynamoDB provisioned capacity, per write / read capacity unit and hour (table and each index alike). */
  provisionedWriteUnitHour: 0.00065,
  provisionedReadUnitHour: 0.00013,
} as const;

/** AWS prices a month as 730 hours. */
export const HOURS_PER_MONTH = 730;

export interface SteadyFlow {
  messagesPerSecond: number;
  /** DynamoDB units per message's whole life (send, receive, complete), table and indexes. */
  writeUnitsPerMessage: number;
  readUnitsPerMessage: number;
  /** Share of provisioned units auto scaling keeps in use (the deploy setting targetUtilization). */
  targetUtilization: number;
}

export interface SteadyFlowPrice {
  messagesPerMonth: number;
  onDemandDollarsPerMonth: number;
  /** Units to provision, summed over the table and its indexes (each provisioned on its own). */
  provisionedWriteUnits: number;
  provisionedReadUnits: number;
  provisionedDollarsPerMonth: number;
  /** provisioned / on-demand. */
  ratio: number;
}

/**
 * DynamoDB's monthly bill for a steady flow, on demand and provisioned (auto scaling holding
 * `targetUtilization`). One write unit a second for an hour is one provisioned WCU-hour; an
 * eventually consistent 4 KB read is half a read unit either way. API Gateway and Lambda cost
 * the same both ways and are left out.
 */
export function steadyFlowPrice(f: SteadyFlow): SteadyFlowPrice {
  const messagesPerMonth = f.messagesPerSecond * 3600 * HOURS_PER_MONTH;
  const onDemand = messagesPerMonth * (f.writeUnitsPerMessage * prices.writeUnit + f.readUnitsPerMessage * prices.readUnit);
  const provisionedWriteUnits = (f.messagesPerSecond * f.writeUnitsPerMessage) / f.targetUtilization;
  const provisionedReadUnits = (f.messagesPerSecond * f.readUnitsPerMessage) / f.targetUtilization;
  const provisioned = HOURS_PER_MONTH * (provisionedWriteUnits * prices.provisionedWriteUnitHour + provisionedReadUnits * prices.provisionedReadUnitHour);
  return {
    messagesPerMonth,
    onDemandDollarsPerMonth: onDemand,
    provisionedWriteUnits,
    provisionedReadUnits,
    provisionedDollarsPerMonth: provisioned,
    ratio: provisioned / onDemand,
  };
}

/** Runs a month of every-minute schedules: 60 × 24 × 30. */
export const RUNS_PER_MONTH = 43_200;
/** Bytes Lambda writes to CloudWatch Logs per invocation (START, END, REPORT lines) when the handler logs nothing. */
export const PLATFORM_LOG_BYTES_PER_CALL = 350;

/** Lambda bills duration in 1 ms steps. */
export const lambdaDurationDollars = (ms: number) => (Math.ceil(ms) / 1000) * prices.lambdaMemoryGb * prices.lambdaGbSecondArm;

export interface PerMessageInputs {
  writeUnits: number;
  readUnits: number;
  httpRequests: number;
  /** API Lambda calls per message (one per HTTP request) and their handler time each, ms. */
  apiCalls: { perMessage: number; ms: number }[];
  /** Stream consumer: invocations per message and handler ms per invocation; its DynamoDB units. */
  stream?: { invocationsPerMessage: number; ms: number; writeUnits: number; readUnits: number };
}

export interface DollarBreakdown {
  dynamodb: number;
  httpApi: number;
  lambdaCalls: number;
  lambdaDuration: number;
  streamConsumer: number;
  total: number;
}

/** Dollars for one million messages. */
export function perMillion(i: PerMessageInputs): DollarBreakdown {
  const M = 1e6;
  const dynamodb = M * (i.writeUnits * prices.writeUnit + i.readUnits * prices.readUnit);
  const httpApi = M * i.httpRequests * prices.httpRequest;
  const lambdaCalls = M * i.apiCalls.reduce((n, c) => n + c.perMessage, 0) * prices.lambdaCall;
  const lambdaDuration = M * i.apiCalls.reduce((n, c) => n + c.perMessage * lambdaDurationDollars(c.ms), 0);
  const s = i.stream;
  const streamConsumer = s
    ? M * (s.invocationsPerMessage * (prices.lambdaCall + lambdaDurationDollars(s.ms)) + s.writeUnits * prices.writeUnit + s.readUnits * prices.readUnit)
    : 0;
  return { dynamodb, httpApi, lambdaCalls, lambdaDuration, streamConsumer, total: dynamodb + httpApi + lambdaCalls + lambdaDuration + streamConsumer };
}

export const competitors = {
  /** Three operations per message (send, receive, complete). */
  serviceBusStandard: 3 * prices.serviceBusPerMillionOps,
  sqs: 3 * prices.sqsPerMillionRequests,
  /** SendMessageBatch, ReceiveMessage of 10, DeleteMessageBatch: three requests per ten messages. */
  sqsBatched: 0.3 * prices.sqsPerMillionRequests,
};

/** Both competitors bill a message by the started 64 KB chunk of its payload. */
export const CHUNK_BYTES = 64 * 1024;

/**
 * Dollars for a million messages of `bodyBytes` (send, receive, complete). Service Bus: three
 * operations per chunk. SQS one at a time: three requests per chunk (a delete carries no
 * payload, but is one request). SQS batched: a batch send and a receive of 10 are billed per
 * 64 KB chunk of the batch's payload, the batch delete as one request.
 */
export function competitorsBySize(bodyBytes: number): { serviceBusStandard: number; sqs: number; sqsBatched: number } {
  const chunks = Math.ceil(bodyBytes / CHUNK_BYTES);
  const batchChunks = Math.ceil((10 * bodyBytes) / CHUNK_BYTES);
  return {
    serviceBusStandard: 3 * chunks * prices.serviceBusPerMillionOps,
    sqs: (2 * chunks + 1) * prices.sqsPerMillionRequests,
    sqsBatched: ((2 * batchChunks + 1) / 10) * prices.sqsPerMillionRequests,
  };
}

export interface IdleInputs {
  jobs: { name: string; readUnits: number; writeUnits: number; ms: number }[];
  /** The stack's resources that bill by the month (bench/fixed-costs.ts, from the synthesized template). */
  fixed?: { total: number; byType: Record<string, number> };
}

export interface IdleBreakdown {
  lambdaCalls: number;
  lambdaDuration: number;
  dynamodb: number;
  logsIngest: number;
  /** Resources billed by the month (alarms, dashboards, keys, provisioned capacity), by type where not 0. */
  fixed: number;
  fixedByType: Record<string, number>;
  total: number;
  perJob: Record<string, { lambda: number; dynamodb: number; readUnitsPerRun: number; msPerRun: number }>;
}

/** An idle deployment's month: each job every minute, nothing to do. */
export function idlePerMonth(i: IdleInputs): IdleBreakdown {
  const perJob: IdleBreakdown['perJob'] = {};
  let lambdaCalls = 0;
  let lambdaDuration = 0;
  let dynamodb = 0;
  for (const j of i.jobs) {
    const calls = RUNS_PER_MONTH * prices.lambdaCall;
    const duration = RUNS_PER_MONTH * lambdaDurationDollars(j.ms);
    const ddb = RUNS_PER_MONTH * (j.readUnits * prices.readUnit + j.writeUnits * prices.writeUnit);
    lambdaCalls += calls;
    lambdaDuration += duration;
    dynamodb += ddb;
    perJob[j.name] = { lambda: calls + duration, dynamodb: ddb, readUnitsPerRun: j.readUnits, msPerRun: j.ms };
  }
  const logsIngest = ((i.jobs.length * RUNS_PER_MONTH * PLATFORM_LOG_BYTES_PER_CALL) / 1024 ** 3) * prices.logsIngestPerGb;
  const fixed = i.fixed?.total ?? 0;
  const fixedByType = Object.fromEntries(Object.entries(i.fixed?.byType ?? {}).filter(([, dollars]) => dollars > 0));
  return { lambdaCalls, lambdaDuration, dynamodb, logsIngest, fixed, fixedByType, total: lambdaCalls + lambdaDuration + dynamodb + logsIngest + fixed, perJob };
}

export const assumptions = [
  'Prices: on-demand list prices, us-east-1; DynamoDB write unit $0.625/M, read unit $0.125/M; HTTP API $1.00/M requests; Lambda $0.20/M calls + $0.0000133334/GB-s (arm64), 256 MB, billed per 1 ms.',
  'Lambda duration is the handler time measured here (Node 20, in-process, DynamoDB Local on this machine); on AWS the network is slower and a 256 MB function gets ~1/7 of a vCPU, so real durations may be several times higher. Init (cold start) duration is not included.',
  'Stream consumer: invoked once per batch of up to 1,000 records (event filtering drops non-message records for free; Lambda reading the stream is free).',
  'Competitors: Azure Service Bus Standard $0.80 per million operations, three per message, plus $10/month base; Amazon SQS standard $0.40 per million requests, three per message, or three per ten messages batched.',
  'Provisioned capacity: $0.00065 per WCU-hour and $0.00013 per RCU-hour (us-east-1), 730 hours a month; a steady flow provisioned at 70 % target utilization (auto scaling, `-c targetUtilization`); bursts above what auto scaling has provisioned are throttled, not billed, which on-demand absorbs.',
  `Idle: sweeper and reaper each invoked every minute (${RUNS_PER_MONTH.toLocaleString('en-US')} runs/month each) by EventBridge schedules (no charge); each run's DynamoDB reads measured on an empty table; CloudWatch Logs ingestion of Lambda's START/END/REPORT lines (~${PLATFORM_LOG_BYTES_PER_CALL} B per call, $0.50/GB) included, log storage negligible; the table's storage of an empty deployment is ~0.`,
  'Idle, fixed: every resource of the default synthesized template priced by type (bench/fixed-costs.ts): $0.10 per alarm-month, $3 per dashboard-month (as if the account’s free 10 alarms and 3 dashboards were used elsewhere), $1 per KMS key-month, provisioned capacity by the hour; a type without a price fails the bench.',
];
