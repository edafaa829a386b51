/**
 * Sluice Explorer in a real browser: headless Chromium driven by playwright-core
 * against the local runtime, the page doing everything through the public HTTP API.
 * Screenshots of the main views are written to docs/ for the README. Page-side expressions
 * given to page.evaluate are strings: this project type-checks without the DOM types.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { signToken } from '../../lib/auth/index.js';
import { repoRoot } from '../../infra/paths.js';
import { workerEndpoint } from '../support/emulator.js';

const chromiumPath = '/usr/bin/chromium';
const silent = { info: () => {}, error: () => {} };
// SLUICE_EXPLORER_SCREENSHOTS=1 refreshes the README's pictures in docs/; otherwise they go to a temporary folder.
const shotsDir = process.env.SLUICE_EXPLORER_SCREENSHOTS ? join(repoRoot, 'docs') : mkdtempSync(join(tmpdir(), 'sluice-explorer-shots-'));
const docs = (name: string) => join(shotsDir, name);
const wait = { timeout: 20_000 };

describe.skipIf(!existsSync(chromiumPath))('Sluice Explorer in Chromium', () => {
  let runtime: LocalRuntime;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const problems: string[] = [];

  /** What an application does, over HTTP with its own token. */
  const app = async (method: string, path: string, body?: unknown) => {
    const authorization = signToken({
      resourceUri: `${runtime.url}/`,
      keyName: 'RootManageSharedAccessKey',
      key: runtime.rootKey,
      expiresAt: Math.floor(Date.now() / 1000) + 600,
    });
    const res = await fetch(`${runtime.url}/${path}`, {
      method,
      headers: { authorization, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `explorer-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 100,
      logger: silent,
    });
    profile = mkdtempSync(join(tmpdir(), 'sluice-explorer-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 860 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (/Content Security Policy|Trusted Type|Refused to/i.test(message.text())) problems.push(message.text());
    });
    page.on('dialog', (dialog) => {
      problems.push(`a script opened a ${dialog.type()} dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await runtime?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (!process.env.SLUICE_EXPLORER_SCREENSHOTS) rmSync(shotsDir, { recursive: true, force: true });
  });

  const treeCount = (name: string, cls: string) => page.locator('nav .tree-link', { hasText: name }).locator(`.count.${cls}`);

  it('serves the page with its CSP; a wrong key gets a clear message', async () => {
    // The address npm start prints opens the explorer in a browser.
    const response = await page.goto(runtime.url);
    expect(page.url()).toBe(`${runtime.url}/explorer`);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    const wrong = runtime.connectionString.replace(/SharedAccessKey=[^;]+/, 'SharedAccessKey=d3JvbmcgcGFzc3dvcmQgZm9yIHNsdWljZSBleHBsb3Jlcg==');
    await page.getByLabel('Connection string or SAS token').fill(wrong);
    await page.getByRole('button', { name: 'Connect' }).click();
    await expect.poll(() => page.locator('.field-error').textContent(), wait).toContain('refused the key');
    expect(await page.getByLabel('Connection string or SAS token').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  it('connects, creates a queue, sends, and the count changes live', async () => {
    // The whole line npm start prints, label included, is accepted.
    await page.getByLabel('Connection string or SAS token').fill(`Connection string: ${runtime.connectionString}`);
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.getByRole('heading', { name: 'Namespace authorization rules' }).waitFor();
    // The connection string stays in this tab's session storage, nowhere else.
    expect(await page.evaluate('[localStorage.length, sessionStorage.length]')).toEqual([0, 1]);

    await page.getByLabel('New queue name').fill('orders');
    await page.getByRole('button', { name: 'Create queue' }).click();
    await page.getByRole('tab', { name: 'Send' }).click();
    await page.getByLabel('Body', { exact: true }).fill('{"order": 7, "note": "<script>window.__owned = 1</script>"}');
    await page.getByLabel('Application properties').fill('{"html": "<img src=x onerror=\\"window.__owned = 2\\">"}');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.locator('.panel .ok', { hasText: 'Sent: sequence number' }).waitFor();
    await page.getByLabel('Body is').selectOption('text');
    await page.getByLabel('Body', { exact: true }).fill('<img src=x onerror="window.__owned = 3"><script>window.__owned = 4</script>');
    await page.getByLabel('Application properties').fill('');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await expect.poll(() => treeCount('orders', 'active').textContent(), wait).toMatch(/^2/);
  });

  it('peeks, and message bodies and properties holding markup show as text', async () => {
    await page.getByRole('tab', { name: 'Messages' }).click();
    const rows = page.locator('table.messages tbody tr');
    await expect.poll(() => rows.count(), wait).toBe(2);
    await rows.nth(0).getByRole('button').click();
    const message = page.locator('article.message');
    await expect.poll(() => message.locator('pre.body').textContent(), wait).toContain('<script>window.__owned = 1</script>');
    expect(await message.locator('.kv dd', { hasText: 'onerror' }).textContent()).toBe('<img src=x onerror="window.__owned = 2">');
    await rows.nth(1).getByRole('button').click();
    await expect
      .poll(() => message.locator('pre.body').textContent(), wait)
      .toBe('<img src=x onerror="window.__owned = 3"><script>window.__owned = 4</script>');
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate('window.__owned')).toBeUndefined();
    await page.getByLabel('Hex').check();
    expect(await message.locator('pre.body').textContent()).toMatch(/^00000000  3c 69 6d 67/);
  });

  it('shows why an application dead-lettered a message, resubmits it, and purges with the count named', async () => {
    // The application takes the first message and dead-letters it, over HTTP.
    const { messages } = (await app('POST', 'queues/orders/messages/receive', { mode: 'peekLock' })) as {
      messages: { sequenceNumber: string; lockToken: string }[];
    };
    const taken = messages[0]!;
    await app('POST', `queues/orders/messages/${taken.sequenceNumber}/deadletter`, {
      lockToken: taken.lockToken,
      deadLetterReason: 'ValidationFailed',
      deadLetterErrorDescription: 'order 7: <b>price</b> must be positive',
    });
    await expect.poll(() => treeCount('orders', 'dead').textContent(), wait).toMatch(/^1/);

    // From the overview, the dead-letter count links straight to the dead letters.
    await page.getByRole('link', { name: 'Namespace overview' }).click();
    await page.getByRole('link', { name: /1 dead-lettered: open them/ }).click();
    const rows = page.locator('table.messages tbody tr');
    await expect.poll(() => rows.count(), wait).toBe(1);
    expect(await rows.first().textContent()).toContain('ValidationFailed');
    await rows.first().getByRole('button').click();
    await expect.poll(() => page.locator('.dead-letter .dl-reason').textContent(), wait).toBe('ValidationFailed');
    expect(await page.locator('.dead-letter .dl-description').textContent()).toBe('order 7: <b>price</b> must be positive');
    await page.screenshot({ path: docs('explorer-dead-letter.png'), fullPage: true });

    await rows.first().getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Resubmit selected (1)' }).click();
    await page.locator('#status', { hasText: 'Resubmitted 1 message to queues/orders.' }).waitFor();
    await expect.poll(() => rows.count(), wait).toBe(0);
    await expect.poll(() => treeCount('orders', 'active').textContent(), wait).toMatch(/^2/);
    // E6: each count may be a few seconds behind, and not all by the same: a positioned queue's
    // active count is read from its positions, its dead letters' from the stream.
    await expect.poll(() => treeCount('orders', 'dead').count(), wait).toBe(0);

    await page.getByLabel('Look in').selectOption('');
    await page.getByRole('button', { name: 'Purge…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Purge 2 messages?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('All 2 messages in queues/orders will be deleted');
    await dialog.getByRole('button', { name: 'Purge 2 messages' }).click();
    await page.locator('#status', { hasText: 'Purged 2 messages from queues/orders.' }).waitFor();
    await expect.poll(() => treeCount('orders', 'empty').count(), wait).toBe(1);
  });

  it("cancels a scheduled message, receives-and-deletes a poison one, and shows a property's error at its field", async () => {
    await app('POST', 'queues/orders/messages', { body: { later: true }, scheduledEnqueueTime: new Date(runtime.clock.now() + 3_600_000).toISOString() });
    await app('POST', 'queues/orders/messages', { body: 'poison', contentType: 'text/plain' });
    await page.getByRole('button', { name: 'Peek' }).click();
    const rows = page.locator('table.messages tbody tr');
    await expect.poll(() => rows.count(), wait).toBe(2);
    await page.getByLabel('State').selectOption('Scheduled');
    await expect.poll(() => rows.count(), wait).toBe(1);
    await rows.first().getByRole('button').click();
    await page.getByRole('button', { name: 'Cancel this scheduled message' }).click();
    await page.locator('.detail .ok', { hasText: 'Cancelled scheduled message' }).waitFor();
    await page.getByLabel('State').selectOption('');
    await expect.poll(() => rows.count(), wait).toBe(1);
    await page.getByRole('button', { name: 'Receive and delete one' }).click();
    await expect.poll(() => page.locator('article.message .notice').textContent(), wait).toContain('Received and deleted');
    expect(await page.locator('article.message pre.body').textContent()).toBe('poison');
    await expect.poll(() => rows.count(), wait).toBe(0);

    await page.getByRole('tab', { name: 'Properties' }).click();
    await page.getByLabel('Lock Duration').fill('half a minute');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => page.locator('.panel .field-error:not([hidden])').textContent(), wait).toContain('is not an ISO 8601 duration');
    expect(await page.getByLabel('Lock Duration').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Lock Duration').fill('PT30S');
    await page.getByLabel('Max Delivery Count').fill('5');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.panel .ok', { hasText: 'Saved' }).waitFor();
    expect(await app('GET', 'queues/orders')).toMatchObject({ lockDuration: 'PT30S', maxDeliveryCount: 5 });
  });

  it("shows a subscription rule's SQL syntax error at its line and column", async () => {
    await app('PUT', 'topics/events', {});
    await app('PUT', 'topics/events/subscriptions/audit', {});
    await page.getByRole('button', { name: 'Refresh counts now' }).click();
    await page.getByRole('link', { name: /Subscription audit/ }).click();
    await page.getByRole('tab', { name: 'Rules' }).click();
    const editor = page.getByRole('form', { name: 'New rule' });
    await editor.getByLabel('Rule name').fill('red');
    await editor.getByLabel('Filter expression').fill("color = 'red'\n  AND size >");
    await editor.getByRole('button', { name: 'Add rule' }).click();
    await expect.poll(() => editor.locator('.field-error:not([hidden])').first().textContent(), wait).toMatch(/line 2, column \d+/);
    expect(await editor.getByLabel('Filter expression').getAttribute('aria-invalid')).toBe('true');
    expect(await editor.locator('pre.sql-caret').textContent()).toMatch(/^  AND size >\n +\^ line 2/);
    await page.screenshot({ path: docs('explorer-rules.png'), fullPage: true });
    await editor.getByLabel('Filter expression').fill("color = 'red'\n  AND size > 3");
    await editor.getByRole('button', { name: 'Add rule' }).click();
    await page.getByRole('form', { name: 'Rule red' }).waitFor();
  });

  it('a view that finishes loading after another tab was chosen does not replace the form being filled', async () => {
    // The subscription's properties answer late; the Rules tab is chosen meanwhile.
    const late = (url: URL) => url.pathname.endsWith('/topics/events/subscriptions/audit');
    await page.route(late, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await route.continue();
    });
    try {
      await page.getByRole('tab', { name: 'Properties' }).click();
      await page.getByRole('tab', { name: 'Rules' }).click();
      const editor = page.getByRole('form', { name: 'New rule' });
      await editor.getByLabel('Rule name').fill('blue');
      await page.waitForResponse((res) => late(new URL(res.url())), wait);
      await page.waitForTimeout(200);
      expect(await editor.getByLabel('Rule name').inputValue()).toBe('blue');
      expect(await page.getByRole('button', { name: 'Save changes' }).count()).toBe(0);
    } finally {
      await page.unroute(late);
    }
  });

  it('R10: a page of 25 messages of 250 KB, more than one answer carries, is filled from several answers', async () => {
    await app('PUT', 'queues/large', {});
    for (let i = 0; i < 25; i++) await app('POST', 'queues/large/messages', { body: `${String(i).padStart(2, '0')}${'x'.repeat(250 * 1024)}` });
    await page.getByRole('link', { name: /Queue large/ }).click();
    await page.getByRole('tab', { name: 'Messages' }).click();
    await page.getByLabel('Page size').selectOption('25');
    await page.getByRole('button', { name: 'Peek', exact: true }).click();
    const rows = page.locator('table.messages tbody tr');
    await expect.poll(() => rows.count(), wait).toBe(25);
    expect(await page.locator('.panel [role=alert]').count()).toBe(0);
  });

  it('stays usable in a narrow window; nothing broke the policy', async () => {
    for (let i = 0; i < 3; i++) await app('POST', 'queues/orders/messages', { body: { order: 100 + i }, subject: 'order.created' });
    await app('POST', 'queues/orders/messages', { body: { order: 200 }, scheduledEnqueueTime: new Date(runtime.clock.now() + 3_600_000).toISOString() });
    await app('POST', 'topics/events/messages', { body: { kind: 'signup' }, subject: 'user.created' });
    const { messages } = (await app('POST', 'topics/events/subscriptions/audit/messages/receive', { mode: 'peekLock' })) as {
      messages: { sequenceNumber: string; lockToken: string }[];
    };
    await app('POST', `topics/events/subscriptions/audit/messages/${messages[0]!.sequenceNumber}/deadletter`, {
      lockToken: messages[0]!.lockToken,
      deadLetterReason: 'SchemaMismatch',
    });
    await page.getByRole('link', { name: 'Namespace overview' }).click();
    await page.getByRole('heading', { name: 'Namespace authorization rules' }).waitFor();
    await expect.poll(() => treeCount('audit', 'dead').textContent(), wait).toMatch(/^1/);
    await expect.poll(() => treeCount('orders', 'scheduled').textContent(), wait).toMatch(/^1/);
    await page.screenshot({ path: docs('explorer-overview.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: /Queue orders/ }).click();
    await page.getByRole('tab', { name: 'Messages' }).waitFor();
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    expect(width).toBeLessThanOrEqual(390);
    await page.screenshot({ path: docs('explorer-narrow.png') });
    // Keyboard: the tabs move with the arrow keys.
    await page.getByRole('tab', { name: 'Messages' }).focus();
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Send');
    expect(problems).toEqual([]);
  });

  it('a Listen key scoped to one queue sees that queue alone: it peeks, but properties need Manage', async () => {
    const rule = (await app('PUT', 'queues/orders/authorization-rules/reader', { rights: ['Listen'] })) as { primaryKey: string };
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await page
      .getByLabel('Connection string or SAS token')
      .fill(`Endpoint=${runtime.url}/;SharedAccessKeyName=reader;SharedAccessKey=${rule.primaryKey};EntityPath=queues/orders`);
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.getByRole('link', { name: /Queue orders/ }).click();
    expect(await page.locator('nav .tree-link').count()).toBe(1);
    await page.getByRole('tab', { name: 'Messages' }).click();
    await expect.poll(() => page.locator('table.messages tbody tr').count(), wait).toBe(4);
    expect(await page.locator('.counts').textContent()).toContain('need Manage');
    await page.getByRole('tab', { name: 'Properties' }).click();
    await expect.poll(() => page.locator('.panel [role=alert]').textContent(), wait).toContain('403 Forbidden');
    expect(problems).toEqual([]);
  });
});
