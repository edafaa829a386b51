/**
 * What the Lambda bundles leave out (infra/bundling.ts's aliases) must be what they never
 * need, so that a shim stands in only for code no Sluice function can reach; and a shim that
 * stands in for code they do run must do what that code does, in the bundle as deployed.
 */
import { resolveEndpointDiscoveryConfig as packageResolveEndpointDiscoveryConfig } from '@aws-sdk/middleware-endpoint-discovery';
import { Sha256 as PackageSha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { build } from 'esbuild';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildBundle, coldStartOutputs } from '../../bench/bundles.js';
import { bundleAliases, bundleOptions, functionBundleOptions, LAZY_CHUNKS_DIR } from '../../infra/bundling.js';
import { handlerEntry, repoRoot } from '../../infra/paths.js';
import { resolveEndpointDiscoveryConfig } from '../../infra/shims/no-endpoint-discovery.js';
import { Sha256 } from '../../infra/shims/node-sha256.js';
import { EventStreamSerde, eventStreamSerdeProvider } from '../../infra/shims/no-event-streams.js';
import { workerEndpoint } from '../support/emulator.js';

const run = promisify(execFile);

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(repoRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(repoRoot, dir, f));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f));
}

describe('the Lambda bundles', () => {
  it('leave out the event-stream codec, which no operation of a bundled AWS client uses', () => {
    // prepare: every AWS SDK client the functions import
    const clients = new Set<string>();
    for (const file of [...sourcesUnder('lib'), ...sourcesUnder('functions')]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/from '(@aws-sdk\/client-[a-z0-9-]+)'/g)) clients.add(m[1]!);
    }
    expect(clients.size).toBeGreaterThan(0);

    // assess: none declares an event-stream member in its commands' types, so the SDK's
    // protocol code never asks for `@smithy/core/event-streams`, which the bundles replace
    expect(bundleAliases['@smithy/core/event-streams']).toMatch(/no-event-streams\.ts$/);
    for (const client of clients) {
      const types = filesUnder(join(repoRoot, 'node_modules', client, 'dist-types')).filter((f) => f.endsWith('.d.ts'));
      expect(types.length).toBeGreaterThan(0);
      const withStreams = types.filter((f) => /EventStream/.test(readFileSync(f, 'utf8')));
      expect(withStreams, client).toEqual([]);
    }
    // and the stand-in fails loudly should one ever be reached
    expect(() => new EventStreamSerde()).toThrow(/event streams are not bundled/);
    expect(() => eventStreamSerdeProvider()).toThrow(/event streams are not bundled/);
  });
});

describe('the bowser stand-in', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bowser-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stands in for code no function reaches: without it, a one-file bundle of each drops bowser, whose only importer Node never calls', async () => {
    const withBowser = Object.fromEntries(Object.entries(bundleAliases).filter(([name]) => name !== 'bowser'));
    for (const name of ['api', 'stream', 'sweeper', 'reaper', 'notify'] as const) {
      const file = join(dir, `${name}.mjs`);
      const { metafile } = await build({ ...bundleOptions(handlerEntry(name)), alias: withBowser, outfile: file, metafile: true });
      // Parsed (the dynamic import names it), but none of it in the output: tree-shaken.
      const inOutput = Object.entries(metafile.outputs[relative(repoRoot, file)]!.inputs).filter(([, { bytesInOutput }]) => bytesInOutput > 0);
      expect(
        inOutput.map(([i]) => i).filter((i) => i.includes('node_modules/bowser')),
        name,
      ).toEqual([]);
    }
  }, 120_000);
});

/** A small deterministic random source, so a failing sequence can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('the endpoint discovery stand-in', () => {
  it("gives DynamoDB's client the configuration the package gives, without the cache nothing reads", async () => {
    const ctor = class DescribeEndpoints {};
    for (const endpointDiscoveryEnabled of [true, false, undefined]) {
      const provider = async () => undefined;
      const input = () => ({ endpointDiscoveryEnabled, endpointDiscoveryEnabledProvider: provider });
      const ours = resolveEndpointDiscoveryConfig(input(), { endpointDiscoveryCommandCtor: ctor });
      const resolveTheirs = packageResolveEndpointDiscoveryConfig as unknown as typeof resolveEndpointDiscoveryConfig;
      const theirs = resolveTheirs(input(), { endpointDiscoveryCommandCtor: ctor }) as typeof ours & {
        endpointCache: unknown;
      };
      expect(theirs.endpointCache).toBeDefined();
      expect(ours).not.toHaveProperty('endpointCache');
      expect(ours.endpointDiscoveryCommandCtor).toBe(theirs.endpointDiscoveryCommandCtor);
      expect(ours.isClientEndpointDiscoveryEnabled).toBe(theirs.isClientEndpointDiscoveryEnabled);
      expect(await ours.endpointDiscoveryEnabled?.()).toBe(await theirs.endpointDiscoveryEnabled?.());
    }
  });

  it('no command of the bundled DynamoDB client reads discovery: none adds its middleware', () => {
    const commands = join(repoRoot, 'node_modules/@aws-sdk/client-dynamodb/dist-es/commands');
    const readers = readdirSync(commands).filter((f) => /endpoint-discovery|EndpointDiscovery/.test(readFileSync(join(commands, f), 'utf8')));
    expect(readers).toEqual([]);
  });
});

describe('the SHA-256 stand-in', () => {
  it("hashes and HMACs as the package's Sha256: digests, more data after a hash's digest, reset, a finished HMAC", async () => {
    const random = seeded(256);
    const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
    const secrets = [undefined, '', 'key', bytes(16), bytes(100).buffer, new DataView(bytes(70).buffer, 3, 40)];
    for (const secret of secrets) {
      const ours = new Sha256(secret);
      const theirs = new PackageSha256(secret);
      for (const n of [0, 1, 63, 64, 65, 1000]) {
        const data = bytes(n);
        ours.update(data);
        theirs.update(data);
        if (secret) break; // an HMAC's digest finishes it
        expect(await ours.digest()).toEqual(await theirs.digest());
      }
      expect(await ours.digest()).toEqual(await theirs.digest());
      if (secret) {
        expect(() => theirs.update(bytes(1))).toThrow(/finished/);
        expect(() => ours.update(bytes(1))).toThrow(/finished/);
      }
      // reset forgets what came before, an HMAC's finish too
      ours.reset();
      theirs.reset();
      const more = bytes(5);
      ours.update(more);
      theirs.update(more);
      expect(await ours.digest()).toEqual(await theirs.digest());
    }
  });
});

describe('the invoke store stand-in', () => {
  const global = globalThis as { awslambda?: { InvokeStore?: unknown } };
  const saved = global.awslambda;
  afterEach(() => {
    if (saved === undefined) delete global.awslambda;
    else global.awslambda = saved;
  });
  const RUNTIME_STORE =
    "{ getXRayTraceId: () => 'Root=1-5759e988-bd862e3fe1be46a994272793', getTraceparent: () => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', runtime: true }";
  /** What the SDK's recursion-detection middleware reads from a store: the trace ids, and whether it is the runtime's. */
  const READ =
    'const s = await InvokeStore.getInstanceAsync(); return { xray: s?.getXRayTraceId?.() ?? null, traceparent: s?.getTraceparent?.() ?? null, runtime: s?.runtime === true };';

  /** The package's answer, in a fresh node (its store is a process-wide singleton). */
  async function fromPackage(published: boolean) {
    const script = `${published ? `globalThis.awslambda = { InvokeStore: ${RUNTIME_STORE} };` : ''} const { InvokeStore } = await import('@aws/lambda-invoke-store'); console.log(JSON.stringify(await (async () => { ${READ} })()));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, timeout: 30_000 });
    return JSON.parse(stdout.trim()) as unknown;
  }

  async function fromShim(published: boolean) {
    if (published) global.awslambda = { InvokeStore: new Function(`return ${RUNTIME_STORE}`)() };
    else delete global.awslambda;
    const { InvokeStore } = await import('../../infra/shims/invoke-store.js');
    return new Function('InvokeStore', `return (async () => { ${READ} })()`)(InvokeStore) as Promise<unknown>;
  }

  it("gives the trace ids the package's store gives, with the runtime's store published and without", async () => {
    for (const published of [false, true]) expect(await fromShim(published)).toEqual(await fromPackage(published));
    expect(await fromShim(false)).toEqual({ xray: null, traceparent: null, runtime: false });
    expect(await fromShim(true)).toMatchObject({ runtime: true, xray: 'Root=1-5759e988-bd862e3fe1be46a994272793' });
  }, 60_000);

  it('stands in for the package in the api bundle', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-invoke-store-'));
    try {
      const file = join(dir, 'api.mjs');
      const built = await build({ ...bundleOptions(handlerEntry('api')), outfile: file, metafile: true });
      const inputs = Object.keys(built.metafile.outputs[relative(repoRoot, file)]?.inputs ?? {});
      expect(inputs).toContain('infra/shims/invoke-store.ts');
      expect(inputs.filter((i) => i.includes('lambda-invoke-store'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the stand-ins in a bundle built as deployed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sdk-shims-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('send to their endpoint against DynamoDB Local with no discovery cache, and sign as the SDK does', async () => {
    // prepare: the probe bundled with the deploy's options, which carries the stand-ins and
    // neither the discovery middleware, its endpoint cache, mnemonist nor the pure JavaScript SHA-256
    const file = join(dir, 'probe.mjs');
    const built = await build({ ...bundleOptions(join(repoRoot, 'test/infra/probes/sdk-shims.ts')), outfile: file, metafile: true });
    const inputs = Object.keys(built.metafile.outputs[relative(repoRoot, file)]?.inputs ?? {});
    expect(inputs).toContain('infra/shims/no-endpoint-discovery.ts');
    expect(inputs).toContain('infra/shims/node-sha256.ts');
    expect(inputs.filter((i) => /mnemonist|endpoint-cache|middleware-endpoint-discovery\/dist|Sha256Js/.test(i))).toEqual([]);

    // act: run it in a plain node against this worker's DynamoDB Local
    const env = { PATH: process.env.PATH, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };
    const { stdout } = await run(process.execPath, [file, workerEndpoint()], { env, cwd: dir, timeout: 60_000 });
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;

    // assess: with discovery asked for or not, each client sent to its endpoint and built no
    // cache, and the signature, hash and HMAC are the unbundled SDK's own
    expect(out.statuses).toEqual([200, 200, 200]);
    expect(out.caches).toEqual([false, false, false]);
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const signer = new SignatureV4({ credentials, region: 'local', service: 'dynamodb', sha256: PackageSha256 });
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
    expect(out.authorization).toBe(signed.headers.authorization);
    const hash = new PackageSha256();
    hash.update(new TextEncoder().encode('sluice'));
    const hmac = new PackageSha256('key');
    hmac.update(new TextEncoder().encode('sluice'));
    expect(out.hash).toBe(Buffer.from(await hash.digest()).toString('hex'));
    expect(out.hmac).toBe(Buffer.from(await hmac.digest()).toString('hex'));
  }, 90_000);
});

describe('the answer schemas', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-doc-schemas-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stay out of the api bundle: only the OpenAPI document and the tests read them', async () => {
    // prepare: the api bundle as deployed, its chunks included
    await buildBundle('api', dir);
    const text = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('\n');

    // assess: a description of each answer schema made by docSchema is absent, and so are
    // the request schemas' descriptions (registered only for the document, describeRequests),
    // while the request schemas themselves, which the api parses bodies with, are there
    const answers = [
      'Runtime information of a queue or subscription (E6).',
      'The name as first given (names are case-insensitive, E1).',
      'ISO 8601 duration; null when unlimited.',
      'A message as received or peeked',
      'A message stored in a queue.',
      'all are validated before any is stored (S4)',
    ];
    const requestWords = [
      'Receive options; all optional (R1).',
      'Lock tokens to settle at once (R9).',
      'The payload: any JSON value.',
      'Application routing hint; not used by the broker.',
      'Application properties: names of 1-256 characters',
      'Where dead-lettered messages are forwarded; null for none (F2).',
      'each replaced by its literal before the text is parsed',
    ];
    expect(answers.filter((a) => text.includes(a))).toEqual([]);
    expect(requestWords.filter((a) => text.includes(a))).toEqual([]);
    expect(text).toContain('must be a lock token as returned by a receive');
    expect(text).toContain('must name a queue or topic, e.g. "queues/orders"');
  }, 90_000);
});

describe('a function bundle as deployed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-chunks-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("leaves Service Bus's protocols and their XML reader to a chunk that only a request speaking one loads", async () => {
    const { metafile } = await build({ ...functionBundleOptions(handlerEntry('api'), dir), metafile: true });
    const cold = coldStartOutputs(metafile);
    const inputsOf = (outputs: string[]) => outputs.flatMap((o) => Object.keys(metafile.outputs[o]!.inputs));
    const lazy = Object.keys(metafile.outputs).filter((o) => o.endsWith('.mjs') && !cold.includes(o));
    const protocolOnly = (i: string) => /^lib\/protocols\/(atom|rest)\/|^lib\/protocols\/(serve|xml)\.ts$|@rgrove\/parse-xml/.test(i);
    expect(inputsOf(cold).filter(protocolOnly)).toEqual([]);
    expect(inputsOf(lazy)).toContain('lib/protocols/serve.ts');
    expect(inputsOf(lazy).some((i) => i.includes('@rgrove/parse-xml'))).toBe(true);
    // The chunks sit beside index.mjs, in the zip the deploy makes of this directory.
    expect(cold[0]).toMatch(/index\.mjs$/);
    expect(lazy.every((o) => o.includes(`/${LAZY_CHUNKS_DIR}/`))).toBe(true);
    // The SDK's browser-only user-agent parser, which Node never loads, stands in for nothing more.
    expect(Object.keys(metafile.inputs).filter((i) => i.includes('node_modules/bowser'))).toEqual([]);
  }, 90_000);
});
