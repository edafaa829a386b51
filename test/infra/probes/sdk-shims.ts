/**
 * Bundled by test/infra/bundling.test.ts with infra/bundling.ts's options, so that the SDK
 * modules below are the Lambda bundles' stand-ins, then run in a plain `node`: argv[2] is a
 * DynamoDB Local endpoint. Prints one JSON line of what the stand-ins did.
 */
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';

const endpoint = new URL(process.argv[2]!);
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

// 1. Clients with endpoint discovery asked for and not: each sends to its endpoint, and none
//    builds a discovery cache (the stand-in for the discovery middleware).
const clients = [true, false, undefined].map(
  (endpointDiscoveryEnabled) =>
    new DynamoDBClient({
      region: 'local',
      credentials,
      endpoint: endpoint.href,
      ...(endpointDiscoveryEnabled === undefined ? {} : { endpointDiscoveryEnabled }),
    }),
);
const sent = await Promise.all(clients.map((client) => client.send(new ListTablesCommand({}))));
const caches = clients.map((client) => (client.config as unknown as { endpointCache?: unknown }).endpointCache);

// 2. SigV4 with the bundled SHA-256, on a fixed request at a fixed instant.
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
    statuses: sent.map((r) => r.$metadata.httpStatusCode),
    caches: caches.map((c) => c !== undefined),
    authorization: signed.headers.authorization,
    hash: Buffer.from(await hash.digest()).toString('hex'),
    hmac: Buffer.from(await hmac.digest()).toString('hex'),
  }),
);
