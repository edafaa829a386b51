/**
 * The client's help in an editor is complete: every class, function, interface, type, enum
 * and constant that `sluice/client` exports, and every public member, constructor and
 * parameter of them, has a doc comment in the emitted declarations (dist/types, as the
 * package ships them), so hovering over any of it shows what it does, as with
 * @azure/service-bus. Read with the compiler's own services, as an editor reads it: a member
 * that implements a documented interface member shows that member's comment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { undocumented } from '../support/doc-comments.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let out: string;

beforeAll(() => {
  // Emitted as build:client emits them, into a folder of this test's own (dist/ may be rebuilt meanwhile).
  out = mkdtempSync(join(tmpdir(), 'sluice-types-'));
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.client.json', '--outDir', out], { cwd: root });
}, 120_000);

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('sluice/client: the help an editor shows', () => {
  it('every exported class, function, type and constant, every public member and parameter, and every result has a doc comment', () => {
    expect(undocumented(out)).toEqual([]);
  });
});
