/**
 * What the Lambda bundles leave out (infra/bundling.ts's aliases) must be what they never
 * need, so that a shim stands in only for code no Sluice function can reach.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleAliases } from '../../infra/bundling.js';
import { repoRoot } from '../../infra/paths.js';
import { EventStreamSerde, eventStreamSerdeProvider } from '../../infra/shims/no-event-streams.js';

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
