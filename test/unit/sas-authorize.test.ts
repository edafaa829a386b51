import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { canonicalPath, generateKey, grantAllows, signToken, type AuthorizationRule, type Right } from '../../lib/auth/index.js';
import { authorize, ruleScopes, type FindRule } from '../../lib/api/authorize.js';

const NOW = 1_800_000_000;

function rule(keyName: string, scopePath: string, rights: Right[]): AuthorizationRule {
  return { keyName, primaryKey: generateKey(), secondaryKey: generateKey(), rights, scopePath };
}

/** A store keyed by (key name, canonical scope), as `findRule` is documented to be called. */
function store(...rules: AuthorizationRule[]): FindRule & { calls: Array<[string, string]> } {
  const calls: Array<[string, string]> = [];
  const find = (keyName: string, scopePath: string) => {
    calls.push([keyName, scopePath]);
    return rules.find((r) => r.keyName === keyName && canonicalPath(r.scopePath) === scopePath);
  };
  return Object.assign(find, { calls });
}

function token(r: AuthorizationRule, resourceUri: string, opts: { key?: string; expiresAt?: number } = {}) {
  return signToken({
    resourceUri,
    keyName: r.keyName,
    key: opts.key ?? r.primaryKey,
    expiresAt: opts.expiresAt ?? NOW + 3600,
  });
}

const root = rule('RootManageSharedAccessKey', '/', ['Manage']);
const sender = rule('sender', '/', ['Send']);
const queueListener = rule('listen', '/queues/a', ['Listen']);
const topicListener = rule('topic-listen', '/topics/t', ['Listen']);
const find = store(root, sender, queueListener, topicListener);
const UNAUTHORIZED = { ok: false, status: 401 };
const FORBIDDEN = { ok: false, status: 403 };

describe('A1 A2 authorize', () => {
  it('A1 accepts a namespace Manage token anywhere', async () => {
    const h = token(root, 'https://sluice.example/');
    for (const [method, path] of [
      ['PUT', '/queues/a'],
      ['POST', '/queues/a/messages'],
      ['POST', '/topics/t/subscriptions/s/messages/receive'],
      ['PUT', '/authorization-rules/x'],
    ] as const) {
      expect(await authorize({ method, path }, h, NOW, find)).toEqual({
        ok: true,
        keyName: 'RootManageSharedAccessKey',
        grant: { scope: [], rights: ['Manage'] },
      });
    }
  });

  it('A2 accepts the secondary key as well as the primary', async () => {
    const h = token(sender, 'https://sluice.example/queues/a', { key: sender.secondaryKey });
    expect(await authorize({ method: 'POST', path: '/queues/a/messages' }, h, NOW, find)).toEqual({
      ok: true,
      keyName: 'sender',
      grant: { scope: ['queues', 'a'], rights: ['Send'] },
    });
  });

  it('A2 an entity rule works for its entity, its subqueues and nothing else', async () => {
    const h = token(queueListener, 'sb://any-host/queues/a');
    const ok = { ok: true, keyName: 'listen', grant: { scope: ['queues', 'a'], rights: ['Listen'] } };
    expect(await authorize({ method: 'POST', path: '/queues/a/messages/receive' }, h, NOW, find)).toEqual(ok);
    expect(await authorize({ method: 'POST', path: '/queues/a/%24deadletterqueue/messages/receive' }, h, NOW, find)).toEqual(ok);
    expect(await authorize({ method: 'POST', path: '/queues/ab/messages/receive' }, h, NOW, find)).toEqual(FORBIDDEN);
    expect(await authorize({ method: 'POST', path: '/queues/a/messages' }, h, NOW, find)).toEqual(FORBIDDEN);
  });

  it('A2 an entity rule cannot sign a token wider than its entity', async () => {
    const forged = token(queueListener, 'https://sluice.example/');
    expect(await authorize({ method: 'GET', path: '/queues/b/messages' }, forged, NOW, find)).toEqual(UNAUTHORIZED);
    const sibling = token(queueListener, 'https://sluice.example/queues/ab');
    expect(await authorize({ method: 'GET', path: '/queues/ab/messages' }, sibling, NOW, find)).toEqual(UNAUTHORIZED);
  });

  it("A2 a topic rule covers the topic's subscriptions", async () => {
    const h = token(topicListener, 'https://sluice.example/topics/t/subscriptions/s');
    expect(await authorize({ method: 'POST', path: '/topics/t/subscriptions/s/messages/receive' }, h, NOW, find)).toEqual({
      ok: true,
      keyName: 'topic-listen',
      grant: { scope: ['topics', 't', 'subscriptions', 's'], rights: ['Listen'] },
    });
  });

  it('A2 asks findRule for every possible scope, canonical and lower-case', async () => {
    const calls = store(topicListener);
    const h = token(topicListener, 'https://sluice.example/Topics/T/Subscriptions/S/%24DeadLetterQueue');
    await authorize({ method: 'GET', path: '/topics/t/subscriptions/s/$deadletterqueue/messages' }, h, NOW, calls);
    expect(calls.calls).toEqual([
      ['topic-listen', '/topics/t/subscriptions/s'],
      ['topic-listen', '/topics/t'],
      ['topic-listen', '/'],
    ]);
    expect(ruleScopes(['queues', 'a', 'messages'])).toEqual([['queues', 'a'], []]);
    expect(ruleScopes(['authorization-rules', 'x'])).toEqual([[]]);
  });

  it('A2 does not trust a rule whose own scope does not cover the token', async () => {
    const sloppy: FindRule = () => queueListener; // returns the /queues/a rule for any scope
    const h = token(queueListener, 'https://sluice.example/queues/b');
    expect(await authorize({ method: 'GET', path: '/queues/b/messages' }, h, NOW, sloppy)).toEqual(UNAUTHORIZED);
  });

  it('A3 missing, malformed, expired, badly signed or unknown-key tokens all get the same 401', async () => {
    const req = { method: 'POST', path: '/queues/a/messages' };
    const good = token(sender, 'https://sluice.example/');
    const cases: Array<string | undefined> = [
      undefined,
      '',
      'Bearer abc',
      good.replace('&se=', '&se=x'),
      token(sender, 'https://sluice.example/', { expiresAt: NOW }),
      token(sender, 'https://sluice.example/', { expiresAt: NOW - 1 }),
      token(sender, 'https://sluice.example/', { key: generateKey() }),
      token(sender, 'https://sluice.example/', { key: root.primaryKey }),
      token({ ...sender, keyName: 'nobody' }, 'https://sluice.example/'),
      good.replace('sr=https%3A%2F%2Fsluice.example%2F', 'sr=https%3A%2F%2Fsluice.example%2Fqueues%2Fa'),
      token(sender, 'https://sluice.example/queues/../'),
    ];
    for (const h of cases) {
      expect(await authorize(req, h, NOW, find)).toEqual(UNAUTHORIZED);
    }
  });

  it('A3 a genuine token without the right, or for another resource, gets 403', async () => {
    const h = token(sender, 'https://sluice.example/queues/a');
    expect(await authorize({ method: 'POST', path: '/queues/a/messages/receive' }, h, NOW, find)).toEqual(FORBIDDEN);
    expect(await authorize({ method: 'DELETE', path: '/queues/a/messages' }, h, NOW, find)).toEqual(FORBIDDEN);
    expect(await authorize({ method: 'PUT', path: '/queues/a' }, h, NOW, find)).toEqual(FORBIDDEN);
    expect(await authorize({ method: 'POST', path: '/queues/b/messages' }, h, NOW, find)).toEqual(FORBIDDEN);
    expect(await authorize({ method: 'POST', path: '/queues/a/../b/messages' }, h, NOW, find)).toEqual(FORBIDDEN);
  });

  it('A2 works with an async findRule, and store errors propagate', async () => {
    const asyncFind: FindRule = async (k, s) => find(k, s);
    const h = token(root, 'https://sluice.example/');
    expect(await authorize({ method: 'GET', path: '/queues' }, h, NOW, asyncFind)).toEqual({
      ok: true,
      keyName: 'RootManageSharedAccessKey',
      grant: { scope: [], rights: ['Manage'] },
    });
    const failing: FindRule = vi.fn(async () => {
      throw new Error('store down');
    });
    await expect(authorize({ method: 'GET', path: '/queues' }, h, NOW, failing)).rejects.toThrow('store down');
  });

  it("B3: the grant is the token's reach: its sr, not its rule's wider scope, with the rule's rights", async () => {
    const h = token(root, 'https://sluice.example/Queues/A');
    const decision = await authorize({ method: 'PUT', path: '/queues/a' }, h, NOW, find);
    if (!decision.ok) throw new Error('expected ok');
    expect(decision.grant).toEqual({ scope: ['queues', 'a'], rights: ['Manage'] });
    expect(grantAllows(decision.grant, '/queues/a', 'Send')).toBe(true);
    expect(grantAllows(decision.grant, 'queues/A/$deadletterqueue', 'Send')).toBe(true);
    expect(grantAllows(decision.grant, 'queues/b', 'Send')).toBe(false);
    expect(grantAllows(decision.grant, 'queues/ab', 'Send')).toBe(false);
    expect(grantAllows(decision.grant, 'queues/a/../b', 'Send')).toBe(false);
    expect(grantAllows({ scope: [], rights: ['Listen'] }, 'queues/a', 'Send')).toBe(false);
    expect(grantAllows({ scope: [], rights: ['Send'] }, 'topics/t/subscriptions/s', 'Send')).toBe(true);
  });

  it('A2: a rule that is no longer current (its entity was deleted) opens nothing, and is asked only once a key verified', async () => {
    const asked: string[] = [];
    const gone = async (r: AuthorizationRule) => {
      asked.push(r.keyName);
      return false;
    };
    const h = token(queueListener, 'https://sluice.example/queues/a');
    expect(await authorize({ method: 'POST', path: '/queues/a/messages/receive' }, h, NOW, find, gone)).toEqual(UNAUTHORIZED);
    expect(asked).toEqual(['listen']);
    const forged = token(queueListener, 'https://sluice.example/queues/a', { key: generateKey() });
    expect(await authorize({ method: 'POST', path: '/queues/a/messages/receive' }, forged, NOW, find, gone)).toEqual(UNAUTHORIZED);
    expect(asked).toEqual(['listen']);
    const live = await authorize({ method: 'POST', path: '/queues/a/messages/receive' }, h, NOW, find, () => true);
    expect(live.ok).toBe(true);
  });

  it('B3 property: an entity-scoped token never reaches another entity', async () => {
    const name = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,10}$/);
    await fc.assert(
      fc.asyncProperty(name, name, fc.constantFrom('', 'x', '-1', '/messages'), async (a, b, tail) => {
        fc.pre(a !== b);
        const r = rule('k', `/queues/${a}`, ['Manage']);
        const h = token(r, `https://h/queues/${a}`);
        const result = await authorize({ method: 'GET', path: `/queues/${b}${tail}` }, h, NOW, store(r));
        const sameEntity = `${b}${tail}` === a || `/queues/${b}${tail}`.startsWith(`/queues/${a}/`);
        expect(result.ok).toBe(sameEntity);
      }),
      { numRuns: 300 },
    );
  });
});
