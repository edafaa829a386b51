/**
 * The storage layer's fence: outside lib/store, no module imports a DynamoDB command, so every
 * read and write of the table is a store operation with its key and condition stated.
 * eslint.config.js holds the rule; this proves it is there and where it applies.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';

const probe = "import { GetCommand } from '@aws-sdk/lib-dynamodb';\nexport const command = GetCommand;\n";
const typeOnly = "import type { GetCommandInput } from '@aws-sdk/lib-dynamodb';\nexport type Input = GetCommandInput;\n";

async function fenced(filePath: string, code = probe): Promise<boolean> {
  const eslint = new ESLint({ cwd: repoRoot });
  const [result] = await eslint.lintText(code, { filePath: `${repoRoot}/${filePath}` });
  return (result?.messages ?? []).some((m) => m.ruleId === '@typescript-eslint/no-restricted-imports');
}

describe('the store fence', () => {
  it('refuses a DynamoDB command in the broker, the protocols, the notifications and the handlers', { timeout: 60_000 }, async () => {
    for (const file of ['lib/broker/settle.ts', 'lib/protocols/dispatch.ts', 'lib/notifications/probe.ts', 'functions/api/handler.ts']) {
      expect(await fenced(file), file).toBe(true);
    }
  });

  it('lets lib/store use them, and anyone import their types', { timeout: 60_000 }, async () => {
    expect(await fenced('lib/store/messages.ts')).toBe(false);
    expect(await fenced('lib/broker/settle.ts', typeOnly)).toBe(false);
  });
});
