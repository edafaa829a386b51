/**
 * Bundled by test/infra/bundling.test.ts with infra/bundling.ts's options, so that the SDK
 * modules below are the Lambda bundles' stand-ins, then run in a plain `node`: argv[2] is a
 * DynamoDB Local endpoint. Prints one JSON line of what the stand-ins did.
 */
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { getEndpointDiscoveryOptionalPlugin } from '@aws-sdk/middleware-endpoint-discovery';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';

const endpoint = new URL(process.argv[2]!);
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
// How the endpoint-discovery middleware keys its cache (getCacheKey: the access key alone
// for an operation without identifiers, which is every one Sluice calls).
const cacheKey = JSON.stringify({ accessKeyId: credentials.accessKeyId });

interface CacheView {
  cache: unknown;
  get(key: string): { Address: string; Expires: number }[] | undefined;
  set(key: string, endpoints: { Address: string; CachePeriodInMinutes: number }[]): void;
}

/**
 * A client with endpoint discovery turned on; `endpointProvider` rather than `endpoint`, as the
 * SDK refuses discovery beside a custom endpoint. DynamoDB's commands of this SDK version no
 * longer add the discovery middleware themselves (the client still makes its cache), so the
 * client adds it for all of them, as the commands of earlier versions did each.
 */
function discoveringClient(url: URL) {
  const client = new DynamoDBClient({
    region: 'local',
    credentials,
    endpointDiscoveryEnabled: true,
    endpointProvider: () => ({ url }),
  });
  const config = client.config as unknown as Parameters<typeof getEndpointDiscoveryOptionalPlugin>[0];
  client.middlewareStack.use(getEndpointDiscoveryOptionalPlugin(config, { clientStack: client.middlewareStack, options: {} }));
  return { client, cache: (client.config as unknown as { endpointCache: CacheView }).endpointCache };
}

async function settled<T>(read: () => T, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return read();
}

// 1. Discovery against DynamoDB Local, which has no DescribeEndpoints: the middleware notes a
//    placeholder, asks, fails, forgets and notes the placeholder again, and every request
//    meanwhile goes to the configured endpoint.
const asking = discoveringClient(endpoint);
const first = await asking.client.send(new ListTablesCommand({}));
const placeholder = await settled(
  () => asking.cache.get(cacheKey),
  (v) => v !== undefined,
);
const second = await asking.client.send(new ListTablesCommand({}));

// 2. A discovered endpoint in the cache is where requests go: the configured host does not
//    exist, the cached address is DynamoDB Local's.
const unreachable = new URL(endpoint);
unreachable.hostname = 'sluice-unreachable.invalid';
const told = discoveringClient(unreachable);
told.cache.set(cacheKey, [{ Address: endpoint.hostname, CachePeriodInMinutes: 5 }]);
const throughCache = await told.client.send(new ListTablesCommand({}));

// 3. SigV4 with the bundled SHA-256, on a fixed request at a fixed instant.
const signer = new SignatureV4({ credentials, region: 'local', service: 'dynamodb', sha256: Sha256 });
const signed = await signer.sign(
  {
    method: 'POST',
    protocol: 'http:',
    hostname: 'localhost',
    path: '/',
    query: {},
    headers: { host: 'localhost', 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' },
    body: '{"Limit":5}',
  },
  { signingDate: new Date('2026-11-28T10:00:00Z') },
);
const hash = new Sha256();
hash.update(new TextEncoder().encode('sluice'));
const hmac = new Sha256('key');
hmac.update(new TextEncoder().encode('sluice'));

console.log(
  JSON.stringify({
    cacheIsMap: asking.cache.cache instanceof Map,
    statuses: [first, second, throughCache].map((r) => r.$metadata.httpStatusCode),
    placeholder: placeholder?.map((e) => e.Address),
    authorization: signed.headers.authorization,
    hash: Buffer.from(await hash.digest()).toString('hex'),
    hmac: Buffer.from(await hmac.digest()).toString('hex'),
  }),
);
