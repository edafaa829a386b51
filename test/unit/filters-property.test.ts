/**
 * Properties of the filter language that tables cannot cover (F1, F4): whatever the
 * text, compiling fails only with FilterSyntaxError; whatever the message, evaluating fails
 * only with FilterEvaluationError, which the broker turns into "no match" or a dead letter.
 * Anything else escaping (TypeError, RangeError) would crash the fan-out Lambda.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileAction,
  compileFilter,
  FilterEvaluationError,
  FilterSyntaxError,
  type CompiledAction,
  type CompiledFilter,
  type FilterMessage,
} from '../../lib/filters/index.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const names = fc.constantFrom('a', 'A', 'b', 'color', 'n', 'x y', '__proto__', 'constructor');

const propertyValue = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.maxSafeInteger(),
  fc.boolean(),
  fc.constant(null),
);

const message: fc.Arbitrary<FilterMessage> = fc.record({
  system: fc.record(
    {
      messageId: fc.string({ maxLength: 4 }),
      correlationId: fc.string({ maxLength: 4 }),
      subject: fc.string({ maxLength: 4 }),
      to: fc.string({ maxLength: 4 }),
      replyTo: fc.string({ maxLength: 4 }),
      sessionId: fc.string({ maxLength: 4 }),
      contentType: fc.string({ maxLength: 4 }),
      deliveryCount: fc.nat(20),
      sequenceNumber: fc.bigInt(INT64_MIN, INT64_MAX).map(String),
      enqueuedTimeUtc: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      size: fc.nat(),
    },
    { requiredKeys: [] },
  ),
  properties: fc.dictionary(fc.oneof(names, fc.string({ maxLength: 4 })), propertyValue, { maxKeys: 6 }),
});

/** Words of the language, so random sequences get past the first token often. */
const token = fc.constantFrom(
  'a',
  'b',
  'color',
  'sys.label',
  'sys.To',
  'sys.SequenceNumber',
  'sys.nope',
  'user.n',
  '[x y]',
  '"q"',
  "'s'",
  "'it''s'",
  "'%a_'",
  "'!'",
  '0',
  '1',
  '2.5',
  '1e3',
  '.5',
  '9223372036854775808',
  '+',
  '-',
  '*',
  '/',
  '%',
  '=',
  '<>',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'AND',
  'or',
  'NOT',
  'LIKE',
  'ESCAPE',
  'IN',
  '(',
  ')',
  ',',
  'IS',
  'NULL',
  'EXISTS',
  'TRUE',
  'FALSE',
  'p(',
  'newid()',
  'property(',
  'SET',
  'REMOVE',
  ';',
  "'",
  '[',
  '"',
  '\n',
);

const soup = fc.array(token, { maxLength: 25 }).map((words) => words.join(' '));
const anyText = fc.oneof(soup, fc.string({ maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 60 }));

/** Well-formed filters, to reach evaluation with interesting trees. */
const { predicate } = fc.letrec<{ expr: string; predicate: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('a', 'b', 'n', 'color', '[x y]', 'sys.DeliveryCount', 'sys.SequenceNumber', 'sys.Label', 'sys.Size'),
    fc.constantFrom("'s'", "''", '0', '1', '-1', '2.5', 'NULL', 'TRUE', '9223372036854775807', '-9223372036854775808'),
    fc.tuple(tie('expr'), fc.constantFrom('+', '-', '*', '/', '%'), tie('expr')).map(([l, op, r]) => `${l} ${op} ${r}`),
    tie('expr').map((e) => `-(${e})`),
    tie('expr').map((e) => `(${e})`),
    tie('expr').map((e) => `p(${e})`),
  ),
  predicate: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(tie('expr'), fc.constantFrom('=', '<>', '<', '<=', '>', '>='), tie('expr')).map(([l, op, r]) => `${l} ${op} ${r}`),
    fc.tuple(tie('expr'), fc.boolean(), tie('expr')).map(([l, not, r]) => `${l} ${not ? 'NOT ' : ''}LIKE ${r}`),
    fc.tuple(tie('expr'), tie('expr'), fc.constantFrom("'!'", "'%'", 'b')).map(([l, r, e]) => `${l} LIKE ${r} ESCAPE ${e}`),
    fc
      .tuple(tie('expr'), fc.boolean(), fc.array(tie('expr'), { minLength: 1, maxLength: 3 }))
      .map(([l, not, list]) => `${l} ${not ? 'NOT ' : ''}IN (${list.join(', ')})`),
    fc.tuple(tie('expr'), fc.boolean()).map(([e, not]) => `${e} IS ${not ? 'NOT ' : ''}NULL`),
    fc.constantFrom('EXISTS(a)', 'EXISTS(sys.To)', 'a', 'TRUE', 'FALSE', 'NULL'),
    tie('predicate').map((p) => `NOT (${p})`),
    fc.tuple(tie('predicate'), fc.constantFrom('AND', 'OR'), tie('predicate')).map(([l, op, r]) => `(${l}) ${op} (${r})`),
  ),
}));

type Outcome = { ok: boolean } | { error: unknown };

function evaluate(filter: CompiledFilter, msg: FilterMessage): Outcome {
  try {
    return { ok: filter.evaluate(msg) };
  } catch (error) {
    return { error };
  }
}

function compileOrSyntaxError<T>(compile: () => T, text: string): T | undefined {
  try {
    return compile();
  } catch (err) {
    expect(err).toBeInstanceOf(FilterSyntaxError);
    const { offset, line, column } = (err as FilterSyntaxError).position;
    expect(offset).toBeGreaterThanOrEqual(0);
    expect(offset).toBeLessThanOrEqual(text.length);
    expect(line).toBeGreaterThanOrEqual(1);
    expect(column).toBeGreaterThanOrEqual(1);
    return undefined;
  }
}

describe('F1/F4 filter language properties', () => {
  it('compiling any text either works or throws FilterSyntaxError with a position', () => {
    fc.assert(
      fc.property(anyText, (sql) => {
        compileOrSyntaxError(() => compileFilter({ sql }), sql);
        compileOrSyntaxError(() => compileAction({ sql }), sql);
      }),
      { numRuns: 1000 },
    );
  });

  it('evaluating any compiled filter on any message gives a boolean or FilterEvaluationError', () => {
    fc.assert(
      fc.property(fc.oneof(predicate, soup), fc.array(message, { minLength: 1, maxLength: 3 }), (sql, msgs) => {
        const filter = compileOrSyntaxError(() => compileFilter({ sql }), sql);
        if (filter === undefined) return;
        for (const msg of msgs) {
          const outcome = evaluate(filter, msg);
          if ('error' in outcome) expect(outcome.error).toBeInstanceOf(FilterEvaluationError);
          else expect(typeof outcome.ok).toBe('boolean');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a condition and its negation never both match (unknown matches neither), and fail together', () => {
    fc.assert(
      fc.property(predicate, message, (sql, msg) => {
        if (sql.length > 500) return;
        const filter = compileOrSyntaxError(() => compileFilter({ sql }), sql);
        if (filter === undefined) return;
        const direct = evaluate(filter, msg);
        const negated = evaluate(compileFilter({ sql: `NOT (${sql})` }), msg);
        expect('error' in negated).toBe('error' in direct);
        if ('ok' in direct && 'ok' in negated) expect(direct.ok && negated.ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('LIKE agrees with a reference regular expression', () => {
    const alphabet = fc.constantFrom('a', 'b', '%', '_', '!');
    const text = fc.array(alphabet, { maxLength: 8 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(text, text, (t, pattern) => {
        const reference = likeReference(pattern);
        const filter = compileFilter({ sql: "t LIKE pat ESCAPE '!'" });
        const outcome = evaluate(filter, { system: {}, properties: { t, pat: pattern } });
        if (reference === undefined) {
          expect('error' in outcome && outcome.error).toBeInstanceOf(FilterEvaluationError);
        } else {
          expect(outcome).toEqual({ ok: reference.test(t) });
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('an action never changes its input and fails only with FilterEvaluationError', () => {
    const target = fc.constantFrom('a', 'A', 'color', '[x y]', '[__proto__]', 'user.n', 'sys.Label', 'sys.To', 'sys.ContentType');
    const statement = fc.oneof(
      fc.tuple(target, predicateFreeExpr()).map(([t, e]) => `SET ${t} = ${e}`),
      target.map((t) => `REMOVE ${t}`),
    );
    const action = fc.array(statement, { minLength: 1, maxLength: 5 }).map((s) => s.join('; '));
    fc.assert(
      fc.property(action, message, (sql, msg) => {
        const compiled: CompiledAction | undefined = compileOrSyntaxError(() => compileAction({ sql }), sql);
        if (compiled === undefined) return;
        const before = structuredClone(msg);
        try {
          const out = compiled.apply(msg);
          expect(Object.getPrototypeOf(out.properties)).toBe(Object.prototype);
        } catch (err) {
          expect(err).toBeInstanceOf(FilterEvaluationError);
        }
        expect(msg).toEqual(before);
      }),
      { numRuns: 500 },
    );
  });
});

function predicateFreeExpr(): fc.Arbitrary<string> {
  return fc.constantFrom("'v'", '1', '2.5', 'NULL', 'TRUE', 'a + 1', "color + '!'", 'n / 0', '1.0 / 0', 'sys.Label', 'newid()', 'p(a)');
}

/** The obvious regex translation; undefined when the pattern ends with its escape. */
function likeReference(pattern: string): RegExp | undefined {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '!') {
      const next = pattern[++i];
      if (next === undefined) return undefined;
      source += next.replace(/[.*+?^${}()|[\]\\%_]/g, '\\$&');
    } else if (c === '%') source += '[\\s\\S]*';
    else if (c === '_') source += '[\\s\\S]';
    else source += c;
  }
  return new RegExp(`^${source}$`);
}
