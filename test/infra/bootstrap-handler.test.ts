/**
 * The deploy-time root key's custom resource handler (functions/bootstrap), against
 * DynamoDB Local: Create makes the RootManageSharedAccessKey rule (A2, A4) without the key
 * ever leaving the table (no Data, no logs); Update keeps it; Delete changes nothing. The key
 * the README's `aws dynamodb get-item` reads is the one that signs working tokens.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { CloudFormationCustomResourceEvent, Context, APIGatewayProxyEventV2 } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiHandler } from '../../functions/api/handler.js';
import { createBootstrapHandler, physicalIdOf, PROPAGATION_WINDOW_MS } from '../../functions/bootstrap/handler.js';
import { faultyDeps } from '../support/faults.js';
import { signToken } from '../../lib/auth/index.js';
import { keysTableOf } from '../../lib/deps.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();

function event(requestType: 'Create' | 'Update' | 'Delete', tableName: string, physicalId?: string): CloudFormationCustomResourceEvent {
  const common = {
    ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:provider',
    ResponseURL: 'https://cloudformation-custom-resource-response.example/',
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Sluice/1',
    RequestId: randomUUID(),
    LogicalResourceId: 'RootKeyEC9149F6',
    ResourceType: 'Custom::SluiceRootKey',
    ResourceProperties: { ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:provider', TableName: tableName },
  };
  if (requestType === 'Create') return { ...common, RequestType: 'Create' };
  if (requestType === 'Update') {
    return { ...common, RequestType: 'Update', PhysicalResourceId: physicalId!, OldResourceProperties: common.ResourceProperties };
  }
  return { ...common, RequestType: 'Delete', PhysicalResourceId: physicalId! };
}

/** The README's command, as the SDK call it makes: `get-item --key ... --query Item.primaryKey.S`. */
async function readRootKeyAsTheReadmeDoes(deps: Awaited<ReturnType<typeof testDeps>>) {
  const got = await deps.client.send(
    new GetItemCommand({ TableName: keysTableOf(deps), Key: { pk: { S: 'auth' }, sk: { S: '/|rootmanagesharedaccesskey' } } }),
  );
  return got.Item;
}

/** Everything written to stdout/stderr while `run` runs (Powertools Logger writes there). */
async function capturingOutput<T>(run: () => Promise<T>): Promise<{ result: T; output: string }> {
  const chunks: string[] = [];
  const capture = (chunk: unknown) => {
    chunks.push(String(chunk));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture as never);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture as never);
  try {
    return { result: await run(), output: chunks.join('') };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe('bootstrap custom resource handler', () => {
  let deps: Awaited<ReturnType<typeof testDeps>>;
  const logged: unknown[] = [];
  const log = { info: (...args: unknown[]) => void logged.push(args) };

  beforeEach(async () => {
    deps = await testDeps(clock, 'bootstrap');
    logged.length = 0;
  });
  afterEach(() => vi.restoreAllMocks());

  it('A2/A4: Create makes the root rule with random 256-bit keys and returns no key, in Data or anywhere', async () => {
    // prepare
    expect(await readRootKeyAsTheReadmeDoes(deps)).toBeUndefined();
    const handler = createBootstrapHandler(deps, log);

    // act
    const response = await handler(event('Create', deps.tableName));

    // assess
    const item = await readRootKeyAsTheReadmeDoes(deps);
    const primaryKey = item?.primaryKey?.S;
    const secondaryKey = item?.secondaryKey?.S;
    expect(primaryKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(secondaryKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(primaryKey!, 'base64')).toHaveLength(32);
    expect(primaryKey).not.toBe(secondaryKey);
    expect(item?.keyName?.S).toBe('RootManageSharedAccessKey');
    expect(item?.rights?.L?.map((r) => r.S)).toEqual(['Manage', 'Send', 'Listen']);
    // Only a physical id, naming the table: no Data, no NoEcho tricks, no key.
    expect(response).toEqual({ PhysicalResourceId: physicalIdOf(deps.tableName) });
    const answer = JSON.stringify(response);
    expect(answer).not.toContain(primaryKey);
    expect(answer).not.toContain(secondaryKey);
    // What it logged names the rule, not its keys.
    expect(logged.length).toBeGreaterThan(0);
    expect(JSON.stringify(logged)).not.toContain(primaryKey);
    expect(JSON.stringify(logged)).not.toContain(secondaryKey);
    expect(JSON.stringify(logged)).toContain('RootManageSharedAccessKey');
  });

  it('A4: with its real logger, nothing it writes to stdout or stderr holds a key', async () => {
    // prepare: the default (Powertools) logger, as on Lambda
    const handler = createBootstrapHandler(deps);

    // act
    const { result, output } = await capturingOutput(() => handler(event('Create', deps.tableName)));

    // assess
    const item = await readRootKeyAsTheReadmeDoes(deps);
    expect(result.PhysicalResourceId).toBe(physicalIdOf(deps.tableName));
    expect(output).toContain('root rule ready'); // the capture works
    expect(output).not.toContain(item!.primaryKey!.S!);
    expect(output).not.toContain(item!.secondaryKey!.S!);
  });

  it('the key read as the README says signs tokens the API accepts', async () => {
    // prepare
    await createBootstrapHandler(deps, log)(event('Create', deps.tableName));
    const key = (await readRootKeyAsTheReadmeDoes(deps))!.primaryKey!.S!;
    // The API as deployed: no SLUICE_ROOT_KEY, so it uses the rule the bootstrap made.
    const api = createApiHandler(deps);
    const call = (authorization: string) =>
      api(
        {
          version: '2.0',
          routeKey: '$default',
          rawPath: '/queues',
          rawQueryString: '',
          headers: { authorization },
          requestContext: { requestId: randomUUID(), http: { method: 'GET', path: '/queues' } },
          isBase64Encoded: false,
        } as unknown as APIGatewayProxyEventV2,
        {} as Context,
      );
    const expiresAt = Math.floor(Date.now() / 1000) + 600;

    // act
    const good = await call(
      signToken({ resourceUri: 'https://example.execute-api.eu-west-1.amazonaws.com/', keyName: 'RootManageSharedAccessKey', key, expiresAt }),
    );
    const bad = await call(
      signToken({ resourceUri: 'https://example.execute-api.eu-west-1.amazonaws.com/', keyName: 'RootManageSharedAccessKey', key: `${key}x`, expiresAt }),
    );

    // assess
    expect(good.statusCode).toBe(200);
    expect(bad.statusCode).toBe(401);
    // The API found the rule and kept it: the key still reads the same.
    expect((await readRootKeyAsTheReadmeDoes(deps))!.primaryKey!.S).toBe(key);
  });

  it('Create again and Update keep the existing keys (a redeploy locks no client out)', async () => {
    // prepare
    const handler = createBootstrapHandler(deps, log);
    const created = await handler(event('Create', deps.tableName));
    const before = await readRootKeyAsTheReadmeDoes(deps);

    // act
    const updated = await handler(event('Update', deps.tableName, created.PhysicalResourceId));
    const recreated = await handler(event('Create', deps.tableName));

    // assess
    expect(updated).toEqual(created);
    expect(recreated).toEqual(created);
    expect(await readRootKeyAsTheReadmeDoes(deps)).toEqual(before);
  });

  /** What DynamoDB answers a role whose policy IAM has not propagated yet. */
  const refusal = (name: string) => async () => {
    throw Object.assign(new Error(`${name}: refused`), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });
  };

  it.each(['AccessDeniedException', 'ProvisionedThroughputExceededException'])(
    'A2: Create retries %s while IAM propagates, on the injected clock, and makes the root rule',
    async (name) => {
      // prepare: the first six calls are refused
      const faulty = faultyDeps(deps, { match: () => true, times: 6, interleave: refusal(name) });
      const started = clock.now();

      // act
      const response = await createBootstrapHandler(faulty, log)(event('Create', deps.tableName));

      // assess: retried past the refusals within the window, then wrote the rule
      expect(response).toEqual({ PhysicalResourceId: physicalIdOf(deps.tableName) });
      expect(faulty.faults.tripped).toBe(6);
      expect(clock.now() - started).toBeGreaterThan(0);
      expect(clock.now() - started).toBeLessThanOrEqual(PROPAGATION_WINDOW_MS);
      expect((await readRootKeyAsTheReadmeDoes(deps))?.keyName?.S).toBe('RootManageSharedAccessKey');
    },
  );

  it('A2: Create gives up after about 30 s of refusals, and at once on an error that will not pass', async () => {
    // prepare
    const denied = faultyDeps(deps, { match: () => true, times: 1_000, interleave: refusal('AccessDeniedException') });
    const broken = faultyDeps(deps, { match: () => true, times: 1_000, interleave: refusal('ValidationException') });
    const started = clock.now();

    // act
    const deniedError = await createBootstrapHandler(denied, log)(event('Create', deps.tableName)).catch((e: Error) => e);
    const waited = clock.now() - started;
    const brokenError = await createBootstrapHandler(broken, log)(event('Create', deps.tableName)).catch((e: Error) => e);

    // assess
    expect((deniedError as Error).name).toBe('AccessDeniedException');
    expect(waited).toBeGreaterThan(PROPAGATION_WINDOW_MS / 2);
    expect(waited).toBeLessThanOrEqual(PROPAGATION_WINDOW_MS);
    expect((brokenError as Error).name).toBe('ValidationException');
    expect(broken.faults.tripped).toBe(1);
    expect(await readRootKeyAsTheReadmeDoes(deps)).toBeUndefined();
  });

  it('A4: Update moves the rules an older deployment kept in the data table into the keys table, keys unchanged, once', async () => {
    // prepare: the root rule and an entity's rule where a deployment before the keys table wrote them
    const legacy = [
      {
        pk: 'auth',
        sk: '/|rootmanagesharedaccesskey',
        keyName: 'RootManageSharedAccessKey',
        scopePath: '/',
        rights: ['Manage', 'Send', 'Listen'],
        primaryKey: 'p0',
        secondaryKey: 's0',
      },
      {
        pk: 'auth',
        sk: '/queues/q|sender',
        keyName: 'sender',
        scopePath: '/queues/q',
        incarnation: 'e1',
        rights: ['Send'],
        primaryKey: 'p1',
        secondaryKey: 's1',
      },
    ];
    for (const Item of legacy) await deps.db.send(new PutCommand({ TableName: deps.tableName, Item }));
    const handler = createBootstrapHandler(deps, log);

    // act
    await handler(event('Update', deps.tableName, physicalIdOf(deps.tableName)));
    await handler(event('Update', deps.tableName, physicalIdOf(deps.tableName)));

    // assess: the same keys (clients keep working), in the keys table only
    expect((await readRootKeyAsTheReadmeDoes(deps))?.primaryKey?.S).toBe('p0');
    for (const item of legacy) {
      const key = { pk: item.pk, sk: item.sk };
      expect((await deps.db.send(new GetCommand({ TableName: keysTableOf(deps), Key: key }))).Item).toEqual(item);
      expect((await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: key }))).Item).toBeUndefined();
    }
  });

  it('Delete does nothing: answers with the same physical id and leaves the rule (it goes with the table)', async () => {
    // prepare
    const handler = createBootstrapHandler(deps, log);
    const created = await handler(event('Create', deps.tableName));
    const before = await readRootKeyAsTheReadmeDoes(deps);

    // act
    const deleted = await handler(event('Delete', deps.tableName, created.PhysicalResourceId));

    // assess
    expect(deleted).toEqual({ PhysicalResourceId: created.PhysicalResourceId });
    expect(await readRootKeyAsTheReadmeDoes(deps)).toEqual(before);
  });

  it('Delete of a resource whose Create never wrote anything creates nothing', async () => {
    // act: CloudFormation rolls back a failed Create with a Delete
    const deleted = await createBootstrapHandler(deps, log)(event('Delete', deps.tableName, 'whatever-the-provider-made-up'));

    // assess
    expect(deleted).toEqual({ PhysicalResourceId: 'whatever-the-provider-made-up' });
    expect(await readRootKeyAsTheReadmeDoes(deps)).toBeUndefined();
  });
});
