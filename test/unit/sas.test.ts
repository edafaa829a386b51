import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalPath,
  computeSignature,
  ConnectionStringError,
  connectionStringResource,
  generateKey,
  hasRight,
  parseAuthorizationHeader,
  parseConnectionString,
  resourceCovers,
  resourceSegments,
  signToken,
  TokenError,
  verifySignature,
  type Right,
} from '../../lib/auth/index.js';
import { requiredRight } from '../../lib/api/authorize.js';

const KEY = 'Sk3y+/with=signs';
const SE = 1_700_000_000;

/** Independent reference: the algorithm written out with node:crypto only. */
function referenceSig(encodedResource: string, se: string, key: string): string {
  return createHmac('sha256', key).update(`${encodedResource}\n${se}`).digest('base64');
}

function header(fields: Record<string, string>): string {
  return `SharedAccessSignature ${Object.entries(fields)
    .map(([k, v]) => `${k}=${v}`)
    .join('&')}`;
}

describe('A1 signToken', () => {
  it('A1 matches a known-answer vector (computed independently with openssl)', () => {
    // printf '%s\n%s' 'https%3A%2F%2Fcontoso.servicebus.windows.net%2Fqueues%2Forders' 1700000000 \
    //   | openssl dgst -sha256 -hmac 'Sk3y+/with=signs' -binary | base64
    const token = signToken({
      resourceUri: 'https://contoso.servicebus.windows.net/queues/orders',
      keyName: 'RootManageSharedAccessKey',
      key: KEY,
      expiresAt: SE,
    });
    expect(token).toBe(
      'SharedAccessSignature sr=https%3A%2F%2Fcontoso.servicebus.windows.net%2Fqueues%2Forders' +
        '&sig=yb4QVK1Fz%2FS4jKQWyErUIfap5q%2F0Z7W%2BlZaYc23uQU4%3D&se=1700000000&skn=RootManageSharedAccessKey',
    );
  });

  it('A1 equals the algorithm computed directly with node:crypto', () => {
    const uri = 'sb://ns.example.net/topics/t/subscriptions/s';
    const sr = encodeURIComponent(uri);
    const expected = `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(referenceSig(sr, '1893456000', 'k'))}&se=1893456000&skn=Listener`;
    expect(signToken({ resourceUri: uri, keyName: 'Listener', key: 'k', expiresAt: 1893456000 })).toBe(expected);
  });

  it('A1 HMAC matches the published @azure/core-amqp vector (key used as text)', () => {
    // Azure/azure-sdk-for-js sdk/core/core-amqp/test/internal/browser/hmacSha256.spec.ts:
    // signString("testKey", "testMessage") === "8N7PlLvnGgnE2gFU7%2BAkSxmAc02cXFkOLlFD5gTuOjo%3D"
    expect(computeSignature('testKey', 'testMessage')).toBe('8N7PlLvnGgnE2gFU7+AkSxmAc02cXFkOLlFD5gTuOjo=');
    expect(encodeURIComponent(computeSignature('testKey', 'testMessage'))).toBe('8N7PlLvnGgnE2gFU7%2BAkSxmAc02cXFkOLlFD5gTuOjo%3D');
  });

  it('A1 lower-cases the resource URI before signing, like the Azure SDKs', () => {
    const lower = signToken({ resourceUri: 'https://h/queues/orders', keyName: 'n', key: 'k', expiresAt: SE });
    const mixed = signToken({ resourceUri: 'HTTPS://H/Queues/Orders', keyName: 'n', key: 'k', expiresAt: SE });
    expect(mixed).toBe(lower);
  });

  it('A1 URL-encodes the key name and it parses back', () => {
    const token = signToken({ resourceUri: '/queues/a', keyName: 'a b&c=d', key: 'k', expiresAt: SE });
    expect(token).toContain('&skn=a%20b%26c%3Dd');
    expect(parseAuthorizationHeader(token).keyName).toBe('a b&c=d');
  });

  it('A1 rejects unusable input without echoing the key', () => {
    const base = { resourceUri: '/queues/a', keyName: 'n', key: 'secret-key', expiresAt: SE };
    for (const bad of [
      { ...base, resourceUri: '' },
      { ...base, keyName: '' },
      { ...base, key: '' },
      { ...base, expiresAt: 1.5 },
      { ...base, expiresAt: -1 },
      { ...base, expiresAt: Number.NaN },
    ]) {
      expect(() => signToken(bad)).toThrow();
      try {
        signToken(bad);
      } catch (error) {
        expect(String(error)).not.toContain('secret-key');
      }
    }
  });
});

describe('A1 verifySignature', () => {
  const token = parseAuthorizationHeader(signToken({ resourceUri: 'https://h/queues/a', keyName: 'n', key: KEY, expiresAt: SE }));

  it('A1 accepts the right key before expiry', () => {
    expect(verifySignature(token, KEY, SE - 1)).toBe(true);
  });

  it('A3 rejects an expired token (from the second se on)', () => {
    expect(verifySignature(token, KEY, SE)).toBe(false);
    expect(verifySignature(token, KEY, SE + 1)).toBe(false);
    expect(verifySignature(token, KEY, Number.NaN)).toBe(false);
  });

  it('A3 rejects another key, an empty key, and the base64-decoded key bytes', () => {
    expect(verifySignature(token, `${KEY}x`, SE - 1)).toBe(false);
    expect(verifySignature(token, '', SE - 1)).toBe(false);
    const b64Key = generateKey();
    const sr = encodeURIComponent('https://h/queues/a');
    const decodedKeySig = createHmac('sha256', Buffer.from(b64Key, 'base64')).update(`${sr}\n${SE}`).digest('base64');
    const t = parseAuthorizationHeader(header({ sr, sig: encodeURIComponent(decodedKeySig), se: String(SE), skn: 'n' }));
    expect(verifySignature(t, b64Key, SE - 1)).toBe(false);
  });

  it('A3 rejects a token whose sr or se was changed after signing', () => {
    const raw = signToken({ resourceUri: 'https://h/queues/a', keyName: 'n', key: KEY, expiresAt: SE });
    const widened = raw.replace('sr=https%3A%2F%2Fh%2Fqueues%2Fa', 'sr=https%3A%2F%2Fh%2F');
    expect(verifySignature(parseAuthorizationHeader(widened), KEY, SE - 1)).toBe(false);
    const extended = raw.replace(`se=${SE}`, `se=${SE + 3600}`);
    expect(verifySignature(parseAuthorizationHeader(extended), KEY, SE - 1)).toBe(false);
  });

  it('A1 accepts the Go SDK spelling (lower-case hex escapes), signed as sent', () => {
    // azure-amqp-common-go: strings.ToLower(url.QueryEscape(uri)). openssl vector:
    // printf '%s\n%s' 'sb%3a%2f%2fcontoso.servicebus.windows.net%2fqueues%2forders' 1700000000 | openssl ...
    const t = parseAuthorizationHeader(
      header({
        sr: 'sb%3a%2f%2fcontoso.servicebus.windows.net%2fqueues%2forders',
        sig: encodeURIComponent('J1UzQ+aRQNNXQr3xrEcKk6q8r7mkcmFTDVXG56UU5Uo='),
        se: String(SE),
        skn: 'n',
      }),
    );
    expect(t.resource).toBe('sb://contoso.servicebus.windows.net/queues/orders');
    expect(verifySignature(t, KEY, SE - 1)).toBe(true);
  });

  it('A1 accepts the .NET/Python spelling of a space (+), signed as sent', () => {
    // WebUtility.UrlEncode / quote_plus encode a space as "+". openssl vector over
    // 'https%3A%2F%2Fcontoso.servicebus.windows.net%2Fqueues%2Fmy+queue'.
    const t = parseAuthorizationHeader(
      header({
        sr: 'https%3A%2F%2Fcontoso.servicebus.windows.net%2Fqueues%2Fmy+queue',
        sig: '7GJBak2PyOWgyo7bR/xWCBPYjHdf3qHbpevbIU/FyYo=', // unencoded signature is accepted too
        se: String(SE),
        skn: 'n',
      }),
    );
    expect(t.resource).toBe('https://contoso.servicebus.windows.net/queues/my queue');
    expect(verifySignature(t, KEY, SE - 1)).toBe(true);
  });
});

describe('A3 parseAuthorizationHeader', () => {
  const sr = encodeURIComponent('https://h/queues/a');
  const sig = encodeURIComponent(referenceSig(sr, String(SE), KEY));
  const good = { sr, sig, se: String(SE), skn: 'n' };

  it('A3 parses a well-formed token', () => {
    expect(parseAuthorizationHeader(header(good))).toEqual({
      resource: 'https://h/queues/a',
      signedResource: sr,
      signature: decodeURIComponent(sig),
      expiry: SE,
      signedExpiry: String(SE),
      keyName: 'n',
    });
  });

  it('A3 accepts any field order, a case-insensitive scheme and surrounding blanks', () => {
    const reordered = `sharedaccesssignature  skn=n&se=${SE}&sig=${sig}&sr=${sr}`;
    expect(parseAuthorizationHeader(`  ${reordered}\t`).resource).toBe('https://h/queues/a');
  });

  const malformed: Array<[string, string | undefined]> = [
    ['missing header', undefined],
    ['empty header', ''],
    ['other scheme', `Bearer ${header(good).slice('SharedAccessSignature '.length)}`],
    ['scheme only', 'SharedAccessSignature'],
    ['scheme and space only', 'SharedAccessSignature '],
    ['no space after scheme', `SharedAccessSignaturesr=${sr}&sig=${sig}&se=${SE}&skn=n`],
    ['missing sr', header({ sig, se: String(SE), skn: 'n' })],
    ['missing sig', header({ sr, se: String(SE), skn: 'n' })],
    ['missing se', header({ sr, sig, skn: 'n' })],
    ['missing skn', header({ sr, sig, se: String(SE) })],
    ['duplicate sr', `${header(good)}&sr=${sr}`],
    ['duplicate skn', `${header(good)}&skn=m`],
    ['duplicate se', `${header(good)}&se=${SE}`],
    ['unknown field', `${header(good)}&sv=1`],
    ['upper-case field name', header({ SR: sr, sig, se: String(SE), skn: 'n' })],
    ['empty sr', header({ ...good, sr: '' })],
    ['empty skn', header({ ...good, skn: '' })],
    ['field without =', `${header(good)}&x`],
    ['trailing &', `${header(good)}&`],
    ['leading &', `SharedAccessSignature &${header(good).slice(22)}`],
    ['non-numeric se', header({ ...good, se: '17e8' })],
    ['negative se', header({ ...good, se: '-1' })],
    ['fractional se', header({ ...good, se: '1.5' })],
    ['signed se', header({ ...good, se: '+1700000000' })],
    ['encoded se', header({ ...good, se: '%31700000000' })],
    ['huge se', header({ ...good, se: '9'.repeat(20) })],
    ['short signature', header({ ...good, sig: 'abc%3D' })],
    ['signature not base64', header({ ...good, sig: '!'.repeat(43) + '%3D' })],
    ['non-canonical base64 signature', header({ ...good, sig: encodeURIComponent('A'.repeat(42) + 'B=') })],
    ['bad escape in sr', header({ ...good, sr: '%zz' })],
    ['invalid UTF-8 in sr', header({ ...good, sr: '%C3' })],
    ['bad escape in skn', header({ ...good, skn: '%' })],
    ['non-ASCII value', header({ ...good, skn: 'nä' })],
    ['space inside a value', header({ ...good, skn: 'a b' })],
    ['too long', header({ ...good, sr: 'a'.repeat(5000) })],
    ['key name over 256 characters', header({ ...good, skn: 'n'.repeat(257) })],
  ];
  it.each(malformed)('A3 rejects %s with a TokenError', (_name, value) => {
    expect(() => parseAuthorizationHeader(value)).toThrow(TokenError);
  });

  it('A3 A4 error messages never quote the header', () => {
    const secretish = header({ ...good, skn: 'RootManageSharedAccessKey', se: 'soon' });
    try {
      parseAuthorizationHeader(secretish);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TokenError);
      expect((error as Error).message).not.toContain('RootManage');
      expect((error as Error).message).not.toContain(sig);
    }
  });

  it('A3 property: any string gives a ParsedToken or a TokenError, never another exception', () => {
    const anyText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: 'binary-ascii', maxLength: 300 }),
      fc.string({ unit: fc.constantFrom('s', 'r', 'e', 'i', 'g', 'k', 'n', '=', '&', '%', '+', '2', 'F', ' ', 'A'), maxLength: 200 }),
      fc
        .tuple(fc.constantFrom(...Object.keys(good)), fc.string({ unit: 'binary', maxLength: 40 }))
        .map(([field, value]) => header({ ...good, [field]: value })),
      fc.tuple(fc.nat({ max: 200 }), fc.string({ unit: 'binary', maxLength: 10 })).map(([at, insert]) => {
        const h = header(good);
        const i = Math.min(at, h.length);
        return h.slice(0, i) + insert + h.slice(i);
      }),
    );
    fc.assert(
      fc.property(anyText, (text) => {
        try {
          const parsed = parseAuthorizationHeader(text);
          expect(typeof parsed.resource).toBe('string');
          expect(Number.isSafeInteger(parsed.expiry)).toBe(true);
        } catch (error) {
          if (!(error instanceof TokenError)) throw error;
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('A1 property: every signed token parses and verifies with its key only', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 80 }),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 4_000_000_000 }),
        (resourceUri, keyName, key, expiresAt) => {
          const parsed = parseAuthorizationHeader(signToken({ resourceUri, keyName, key, expiresAt }));
          expect(parsed.resource).toBe(resourceUri.toLowerCase());
          expect(parsed.keyName).toBe(keyName);
          expect(parsed.expiry).toBe(expiresAt);
          expect(verifySignature(parsed, key, expiresAt - 1)).toBe(true);
          expect(verifySignature(parsed, `${key}.`, expiresAt - 1)).toBe(false);
        },
      ),
    );
  });
});

describe('A2 B3 resourceCovers', () => {
  const covered: Array<[string, string]> = [
    ['https://h/queues/a', '/queues/a'],
    ['https://h/queues/a', '/queues/a/'],
    ['https://h/queues/a', '/queues/a/messages'],
    ['https://h/queues/a', '/queues/a/messages/12/complete'],
    ['https://h/queues/a', '/queues/a/$deadletterqueue/messages'],
    ['https://h/queues/a', '/queues/a/%24deadletterqueue/messages'],
    ['https://h/queues/a/%24deadletterqueue', '/queues/a/$DeadLetterQueue/messages'],
    ['https://h/queues/a/$deadletterqueue', '/queues/a/%24deadletterqueue'],
    ['sb://other-host.example/queues/a', '/queues/a/messages'],
    ['https://h/Queues/A', '/queues/a/messages'],
    ['https://h/queues/a', '/QUEUES/A/messages'],
    ['/queues/a', '/queues/a/messages'],
    ['queues/a', '/queues/a/messages'],
    ['https://h/topics/t', '/topics/t/subscriptions/s/messages/receive'],
    ['https://h/queues/my%20queue', '/queues/my%20queue/messages'],
    ['https://h/queues/my%20queue', '/queues/my queue'],
    ['https://h/', '/queues/a'],
    ['https://h', '/topics/t/subscriptions/s'],
    ['sb://h/', '/authorization-rules/x'],
    ['/', '/queues'],
    ['https://h/', '/'],
    // A session id (N1) is no name; an encoded `/` in it stays inside its segment.
    ['https://h/queues/a', '/queues/a/sessions/x%2Fy/receive'],
    ['https://h/topics/t', '/topics/t/subscriptions/s/sessions/..%2F..%2Fb/state'],
    ['https://h/queues/a/sessions/x%2Fy', '/queues/a/sessions/x%2Fy/receive'],
  ];
  it.each(covered)('A2 B3 sr %s covers %s', (sr, path) => {
    expect(resourceCovers(sr, path)).toBe(true);
  });

  const notCovered: Array<[string, string]> = [
    ['https://h/queues/a', '/queues/ab'],
    ['https://h/queues/a', '/queues/ab/messages'],
    ['https://h/queues/a', '/queues/a-b'],
    ['https://h/queues/a', '/queues'],
    ['https://h/queues/a', '/'],
    ['https://h/queues/a', '/topics/a'],
    ['https://h/queues/a/$deadletterqueue', '/queues/a/messages'],
    ['https://h/queues/a/$deadletterqueue', '/queues/a/$transferdeadletterqueue'],
    ['https://h/topics/t/subscriptions/s', '/topics/t/messages'],
    ['https://h/topics/t/subscriptions/s', '/topics/t/subscriptions/s2/messages'],
    // Fail closed on anything a router might resolve differently.
    ['https://h/queues/a', '/queues/a/../b'],
    ['https://h/queues/a', '/queues/a/%2e%2e/b'],
    ['https://h/queues/a', '/queues/a/./messages'],
    ['https://h/queues/a', '/queues/a%2Fb'],
    ['https://h/queues/a', '/queues/a/b%2F..%2F..%2Fc'],
    ['https://h/queues/a', '/queues/a/%5C..'],
    ['https://h/queues/a', '/queues/a//messages'],
    ['https://h/queues/a', '/queues/a/messages?x=1'],
    ['https://h/queues/a', '/queues/a/%zz'],
    ['https://h/queues/a', '/queues/a/%00'],
    ['https://h/queues/a?x=1', '/queues/a'],
    ['https://h/queues/../topics', '/topics/t'],
    ['https://h/queues//', '/queues/a'],
    ['https://h/queues/%zz', '/queues/%zz'],
    // The session-id exception reaches no further than a session id.
    ['https://h/queues/b', '/queues/a/sessions/..%2F..%2Fb/receive'],
    ['https://h/queues/a/sessions/x', '/queues/a/sessions/x%2Fy/receive'],
    ['https://h/queues/a', '/queues/sessions/a%2Fb'],
    ['https://h/queues/a', '/queues/a/sessions/%2e%2e'],
    // A host without a scheme is just a first segment: covers nothing real.
    ['h.servicebus.windows.net/queues/a', '/queues/a'],
  ];
  it.each(notCovered)('B3 sr %s does not cover %s', (sr, path) => {
    expect(resourceCovers(sr, path)).toBe(false);
  });

  it('A2 canonicalPath normalises case, $ spelling, host and trailing slash', () => {
    expect(canonicalPath('https://Host/Queues/A/%24DeadLetterQueue/')).toBe('/queues/a/$deadletterqueue');
    expect(canonicalPath('sb://host')).toBe('/');
    expect(canonicalPath('/queues/a/../b')).toBeUndefined();
    expect(canonicalPath('/queues/100%25')).toBe('/queues/100%25');
    expect(resourceSegments(canonicalPath('/queues/100%25')!)).toEqual(['queues', '100%']);
  });

  const segment = fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }).filter(
    // eslint-disable-next-line no-control-regex -- names without control characters, the ones readResource accepts
    (s) => s !== '.' && s !== '..' && !/[/\\\x00-\x1f\x7f]/.test(s),
  );
  const encodedPath = fc.array(segment, { minLength: 1, maxLength: 5 }).map((segs) => `/${segs.map(encodeURIComponent).join('/')}`);

  it("B3 property: a token for P never covers a sibling that merely starts with P's text", () => {
    fc.assert(
      fc.property(
        encodedPath,
        fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }).filter((s) => !s.startsWith('/')),
        fc.string({ unit: 'binary', maxLength: 20 }),
        (p, suffix, more) => {
          expect(resourceCovers(p, `${p}${suffix}${more}`)).toBe(false);
          expect(resourceCovers(`https://h${p}`, `${p}${suffix}`)).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('B3 property: a token for P covers P and every path below it, whatever the host', () => {
    fc.assert(
      fc.property(encodedPath, fc.array(segment, { maxLength: 3 }), fc.domain(), (p, below, host) => {
        const child = below.length === 0 ? p : `${p}/${below.map(encodeURIComponent).join('/')}`;
        expect(resourceCovers(`https://${host}${p}`, child)).toBe(true);
        expect(resourceCovers(p, child.toUpperCase())).toBe(true);
      }),
    );
  });

  it('B3 property: coverage is exactly a whole-segment prefix of the canonical paths', () => {
    fc.assert(
      fc.property(encodedPath, encodedPath, (a, b) => {
        const ca = canonicalPath(a)!;
        const cb = canonicalPath(b)!;
        expect(canonicalPath(ca)).toBe(ca);
        expect(resourceCovers(a, b)).toBe(cb === ca || cb.startsWith(ca === '/' ? '/' : `${ca}/`));
      }),
    );
  });
});

describe('A2 rights', () => {
  const table: Array<[Right[], Right, boolean]> = [
    [['Manage'], 'Manage', true],
    [['Manage'], 'Send', true],
    [['Manage'], 'Listen', true],
    [['Send'], 'Send', true],
    [['Send'], 'Listen', false],
    [['Send'], 'Manage', false],
    [['Listen'], 'Listen', true],
    [['Listen'], 'Send', false],
    [['Listen'], 'Manage', false],
    [['Send', 'Listen'], 'Send', true],
    [['Send', 'Listen'], 'Listen', true],
    [['Send', 'Listen'], 'Manage', false],
    [[], 'Send', false],
  ];
  it.each(table)('A2 granted %j has %s: %s', (granted, needed, expected) => {
    expect(hasRight(granted, needed)).toBe(expected);
  });

  const routes: Array<[string, string, Right]> = [
    // Send
    ['POST', '/queues/q/messages', 'Send'],
    ['POST', '/topics/t/messages', 'Send'],
    ['POST', '/queues/q/messages/batch', 'Send'],
    ['POST', '/topics/t/messages/batch', 'Send'],
    ['DELETE', '/queues/q/messages/scheduled/42', 'Send'],
    ['DELETE', '/topics/t/messages/scheduled/42', 'Send'],
    // Listen: receive, peek, settlement, on entities and subqueues
    ['POST', '/queues/q/messages/receive', 'Listen'],
    ['POST', '/topics/t/subscriptions/s/messages/receive', 'Listen'],
    ['POST', '/queues/q/$deadletterqueue/messages/receive', 'Listen'],
    ['POST', '/queues/q/%24deadletterqueue/messages/receive', 'Listen'],
    ['POST', '/topics/t/subscriptions/s/$transferdeadletterqueue/messages/receive', 'Listen'],
    ['GET', '/queues/q/messages', 'Listen'],
    ['GET', '/topics/t/subscriptions/s/messages', 'Listen'],
    ['GET', '/queues/q/$deadletterqueue/messages', 'Listen'],
    ['POST', '/queues/q/messages/7/complete', 'Listen'],
    ['POST', '/queues/q/messages/7/abandon', 'Listen'],
    ['POST', '/queues/q/messages/7/deadletter', 'Listen'],
    ['POST', '/queues/q/messages/7/defer', 'Listen'],
    ['POST', '/queues/q/messages/7/renew-lock', 'Listen'],
    ['POST', '/topics/t/subscriptions/s/messages/7/complete', 'Listen'],
    ['POST', '/queues/q/$deadletterqueue/messages/7/complete', 'Listen'],
    ['POST', '/queues/q/messages/complete', 'Listen'],
    ['POST', '/queues/q/messages/abandon', 'Listen'],
    ['POST', '/queues/q/messages/deferred', 'Listen'],
    ['post', '/Queues/Q/Messages/Receive', 'Listen'],
    // Manage: management, listing, rules, authorization rules, resubmit, purge
    ['PUT', '/queues/q', 'Manage'],
    ['GET', '/queues/q', 'Manage'],
    ['DELETE', '/queues/q', 'Manage'],
    ['PUT', '/topics/t', 'Manage'],
    ['PUT', '/topics/t/subscriptions/s', 'Manage'],
    ['GET', '/topics/t/subscriptions/s', 'Manage'],
    ['PUT', '/topics/t/subscriptions/s/rules/r', 'Manage'],
    ['GET', '/topics/t/subscriptions/s/rules', 'Manage'],
    ['DELETE', '/topics/t/subscriptions/s/rules/r', 'Manage'],
    ['GET', '/queues', 'Manage'],
    ['GET', '/topics', 'Manage'],
    ['GET', '/topics/t/subscriptions', 'Manage'],
    ['PUT', '/authorization-rules/x', 'Manage'],
    ['PUT', '/queues/q/authorization-rules/x', 'Manage'],
    ['POST', '/queues/q/authorization-rules/x/regenerate', 'Manage'],
    ['PUT', '/topics/t/subscriptions/s/authorization-rules/x', 'Manage'],
    ['POST', '/queues/q/$deadletterqueue/resubmit', 'Manage'],
    ['POST', '/topics/t/subscriptions/s/$deadletterqueue/resubmit', 'Manage'],
    ['DELETE', '/queues/q/messages', 'Manage'],
    ['DELETE', '/queues/q/$deadletterqueue/messages', 'Manage'],
    ['DELETE', '/topics/t/subscriptions/s/messages', 'Manage'],
    // Not routes, or routes on the wrong kind of entity: the safe default
    ['POST', '/queues/q/$deadletterqueue/messages', 'Manage'],
    ['POST', '/topics/t/subscriptions/s/messages', 'Manage'],
    ['POST', '/topics/t/messages/receive', 'Manage'],
    ['GET', '/topics/t/messages', 'Manage'],
    ['POST', '/queues/q/messages/x/complete', 'Manage'],
    ['POST', '/queues/q/messages/7/explode', 'Manage'],
    ['DELETE', '/queues/q/messages/scheduled/x', 'Manage'],
    ['PATCH', '/queues/q/messages', 'Manage'],
    ['POST', '/queues/q/messages/../../../authorization-rules/x', 'Manage'],
    ['POST', '/_local/jobs/sweeper', 'Manage'],
    // An entity may be called "messages"
    ['PUT', '/queues/messages', 'Manage'],
    ['POST', '/queues/messages/messages', 'Send'],
  ];
  it.each(routes)('A2 %s %s needs %s', (method, path, right) => {
    expect(requiredRight(method, path)).toBe(right);
  });
});

describe('A4 generateKey', () => {
  it('A4 makes 256-bit base64 keys, different each time', () => {
    const keys = new Set(Array.from({ length: 50 }, () => generateKey()));
    expect(keys.size).toBe(50);
    for (const key of keys) {
      expect(key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(key, 'base64')).toHaveLength(32);
    }
  });
});

describe('parseConnectionString', () => {
  it('reads the Azure format, with = inside the key and any key case', () => {
    const cs = parseConnectionString('Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=abc+/=;');
    expect(cs).toEqual({
      endpoint: 'sb://ns.servicebus.windows.net/',
      sharedAccessKeyName: 'RootManageSharedAccessKey',
      sharedAccessKey: 'abc+/=',
    });
    expect(connectionStringResource(cs)).toBe('sb://ns.servicebus.windows.net/');
    const scoped = parseConnectionString(
      ' endpoint = http://localhost:4280/ ; sharedaccesskeyname=n;SHAREDACCESSKEY=k;EntityPath=queues/a;UseDevelopmentEmulator=true',
    );
    expect(connectionStringResource(scoped)).toBe('http://localhost:4280/queues/a');
    expect(scoped.useDevelopmentEmulator).toBe(true);
    expect(
      parseConnectionString('Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=false').useDevelopmentEmulator,
    ).toBeUndefined();
  });

  it.each([
    ['', 'Endpoint'],
    ['SharedAccessKeyName=n;SharedAccessKey=k', 'Endpoint'],
    ['Endpoint=sb://h/;SharedAccessKey=k', 'SharedAccessKeyName'],
    ['Endpoint=sb://h/;SharedAccessKeyName=n', 'SharedAccessKey'],
    ['Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=', 'SharedAccessKey'],
    ['Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=k;sharedaccesskey=k2', 'more than once'],
    ['Endpoint=sb://h/;garbage;SharedAccessKeyName=n;SharedAccessKey=k', 'Name=value'],
    ['Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=k;constructor', 'Name=value'],
  ])('rejects %j (%s) without quoting values', (text, fragment) => {
    expect(() => parseConnectionString(text)).toThrow(ConnectionStringError);
    expect(() => parseConnectionString(text)).toThrow(fragment);
    try {
      parseConnectionString(text);
    } catch (error) {
      expect((error as Error).message).not.toContain('k2');
    }
  });
});
