/**
 * The Service Bus filter and rule action language (F1, F4), written as tables so the
 * tables double as the language's reference. Semantics chosen where the Service Bus
 * documentation leaves room are explained next to the cases that pin them down.
 */
import { describe, expect, it } from 'vitest';
import {
  actionSpecSchema,
  compileAction,
  compileFilter,
  evaluateFilter,
  FilterEvaluationError,
  filterSpecSchema,
  FilterSyntaxError,
  type CorrelationFilterSpec,
  type FilterMessage,
} from '../../lib/filters/index.js';

/** One message with every system property and application properties of every kind. */
const MSG: FilterMessage = {
  system: {
    messageId: 'm-1',
    correlationId: 'c-1',
    subject: 'order.created',
    to: 'orders',
    replyTo: 'replies',
    replyToSessionId: 'rs-1',
    sessionId: 's-1',
    contentType: 'application/json',
    partitionKey: 'p-1',
    deliveryCount: 1,
    // 2^53 + 1: only exact 64-bit arithmetic tells it from 2^53.
    sequenceNumber: '9007199254740993',
    enqueuedTimeUtc: '2026-11-20T12:00:00.000Z',
    size: 512,
  },
  properties: {
    color: 'red',
    Quantity: 10,
    price: 2.5,
    urgent: true,
    nothing: null,
    pct: '100%',
    twoChars: 'ab',
    'my prop': 'spaced',
    'HR-EmployeeID': 'E7',
    'quote"d': 'q',
  },
};

const NO_TO: FilterMessage = { system: { messageId: 'm-2' }, properties: {} };

type Expected = boolean | 'throws';
interface FilterCase {
  sql: string;
  expected: Expected;
  msg?: FilterMessage;
}

function table(rows: [sql: string, expected: Expected, msg?: FilterMessage][]): FilterCase[] {
  return rows.map(([sql, expected, msg]) => (msg === undefined ? { sql, expected } : { sql, expected, msg }));
}

function run({ sql, expected, msg = MSG }: FilterCase): void {
  const filter = compileFilter({ sql });
  if (expected === 'throws') {
    expect(() => filter.evaluate(msg)).toThrow(FilterEvaluationError);
  } else {
    expect(filter.evaluate(msg)).toBe(expected);
  }
}

describe('F1 SQL filters', () => {
  describe('comparison operators', () => {
    it.each(
      table([
        ["color = 'red'", true],
        // String values compare ordinally: case matters in values, unlike in names.
        ["color = 'Red'", false],
        ["color <> 'blue'", true],
        ["color != 'red'", false],
        ['Quantity > 5', true],
        ['Quantity >= 10', true],
        ['Quantity < 10', false],
        ['Quantity <= 10', true],
        ['price = 2.5', true],
        // Int64 against Double promotes to Double, as C# does.
        ['Quantity = 10.0', true],
        ['price > Quantity', false],
        ['urgent = TRUE', true],
        ['urgent <> false', true],
        ['1 = 1', true],
        ["'a' = 'a'", true],
        ['Quantity>=10AND price<3', true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('property names (case-insensitive, user scope by default)', () => {
    it.each(
      table([
        ["COLOR = 'red'", true],
        ["user.color = 'red'", true],
        ["USER.Color = 'red'", true],
        ["[my prop] = 'spaced'", true],
        ["[HR-EmployeeID] = 'E7'", true],
        ['"quote""d" = \'q\'', true],
        ["sys.label = 'order.created'", true],
        ["sys.Subject = 'order.created'", true],
        ["SYS.LABEL = 'order.created'", true],
        ["sys.[Label] = 'order.created'", true],
        ["sys.MessageId = 'm-1'", true],
        ["sys.CorrelationId = 'c-1'", true],
        ["sys.To = 'orders'", true],
        ["sys.ReplyTo = 'replies'", true],
        ["sys.ReplyToSessionId = 'rs-1'", true],
        ["sys.SessionId = 's-1'", true],
        ["sys.ContentType = 'application/json'", true],
        ["sys.PartitionKey = 'p-1'", true],
        ['sys.DeliveryCount = 1', true],
        ['sys.SequenceNumber = 9007199254740993', true],
        ['sys.SequenceNumber = 9007199254740992', false],
        ["sys.EnqueuedTimeUtc = '2026-11-20T12:00:00.000Z'", true],
        ['sys.Size > 100', true],
        ['color = sys.label', false],
        // Without `sys.` a name is an application property: here a missing one.
        ["label = 'order.created'", false],
        // A known system property the message lacks is NULL, not an error.
        ["sys.To = 'orders'", false, NO_TO],
      ]),
    )('$sql -> $expected', run);
  });

  describe('AND, OR, NOT and three-valued logic', () => {
    it.each(
      table([
        ["color = 'red' AND Quantity = 10", true],
        ["color = 'red' AND Quantity = 11", false],
        ["color = 'blue' OR Quantity = 10", true],
        ["NOT color = 'blue'", true],
        ["not (color = 'red')", false],
        // AND binds tighter than OR.
        ["color = 'red' or Quantity = 1 and price = 0", true],
        ["(color = 'red' OR Quantity = 1) AND price = 0", false],
        ["((((color = 'red'))))", true],
        // A missing property is unknown; unknown is not a match...
        ['missing = 1', false],
        ['missing <> 1', false],
        // ...and NOT unknown is still unknown.
        ['NOT missing = 1', false],
        ["missing = 1 OR color = 'red'", true],
        ["missing = 1 AND color = 'blue'", false],
        // unknown AND false = false, so its negation matches.
        ["NOT (missing = 1 AND color = 'blue')", true],
        // unknown OR false = unknown.
        ["NOT (missing = 1 OR color = 'blue')", false],
        // A property holding null behaves like a missing one in comparisons.
        ['nothing = 1', false],
        ['missing = NULL', false],
        ['NULL = NULL', false],
        // Bare boolean properties and constants are conditions.
        ['TRUE', true],
        ['FALSE', false],
        ['urgent', true],
        ['NOT urgent', false],
        ['missing', false],
        ['NOT missing', false],
        ["color = 'red' and not Quantity in (1) or false", true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('IS [NOT] NULL and EXISTS', () => {
    it.each(
      table([
        ['missing IS NULL', true],
        ['nothing IS NULL', true],
        ['color IS NULL', false],
        ['color IS NOT NULL', true],
        ['sys.SessionId IS NOT NULL', true],
        ['sys.To IS NULL', true, NO_TO],
        ['EXISTS(color)', true],
        // EXISTS asks whether the name is there, whatever its value.
        ['EXISTS(nothing)', true],
        ['EXISTS(missing)', false],
        ['NOT EXISTS(missing)', true],
        ['EXISTS (COLOR)', true],
        ['EXISTS(sys.To)', true],
        ['EXISTS(sys.To)', false, NO_TO],
        ['missing + 1 IS NULL', true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('[NOT] LIKE with % _ and ESCAPE', () => {
    it.each(
      table([
        ["color LIKE 'r%'", true],
        // Case-sensitive, like string equality.
        ["color LIKE 'R%'", false],
        ["color LIKE '_ed'", true],
        ["color LIKE '__'", false],
        ["color LIKE '%'", true],
        ["'' LIKE '%'", true],
        ["color NOT LIKE 'b%'", true],
        ["sys.label LIKE '%.created'", true],
        ["sys.label LIKE 'order_created'", true],
        ["pct LIKE '100!%' ESCAPE '!'", true],
        ["pct LIKE '10!%' ESCAPE '!'", false],
        ["color LIKE 'r!%' ESCAPE '!'", false],
        ["pct LIKE '100\\%' ESCAPE '\\'", true],
        // Regex characters mean nothing special.
        ["'a.c' LIKE 'a.c'", true],
        ["'abc' LIKE 'a.c'", false],
        ["missing LIKE '%'", false],
        ["missing NOT LIKE '%'", false],
        ['color LIKE missing', false],
        // A computed pattern works too.
        ["sys.label LIKE color + '%' OR sys.label LIKE 'order' + '%'", true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('[NOT] IN', () => {
    it.each(
      table([
        ["color IN ('blue', 'red')", true],
        ["color NOT IN ('blue', 'red')", false],
        ['Quantity IN (1, 10.0)', true],
        ["sys.To IN ('Store5', 'orders')", true],
        ["missing IN ('a')", false],
        ["missing NOT IN ('a')", false],
        // Only an unknown left side makes IN unknown; a NULL in the list never matches.
        ["color NOT IN ('blue', NULL)", true],
        ["color IN (NULL, 'red')", true],
        ["color IN (sys.label, 'r' + 'ed')", true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('arithmetic (Int64 and Double as in C#)', () => {
    it.each(
      table([
        ['Quantity + 1 = 11', true],
        ['Quantity - 11 = -1', true],
        // Int64 division truncates toward zero.
        ['Quantity / 4 = 2', true],
        ['-7 / 2 = -3', true],
        ['-7 % 2 = -1', true],
        ['Quantity / 4.0 = 2.5', true],
        ['Quantity % 3 = 1', true],
        ['-Quantity = -10', true],
        ['- -Quantity = 10', true],
        ['+Quantity = 10', true],
        ['2 + 3 * 4 = 14', true],
        ['(2 + 3) * 4 = 20', true],
        ['10 - 2 - 3 = 5', true],
        ['price * 2 = 5', true],
        // Int64 wraps around like unchecked C#.
        ['9223372036854775807 + 1 = -9223372036854775808', true],
        ['sys.SequenceNumber - 1 = 9007199254740992', true],
        // Double division by zero is Infinity, not an error.
        ['price / 0 > 1000000', true],
        ["'ab' + 'c' = 'abc'", true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('constants', () => {
    it.each(
      table([
        ['1.5e1 = 15', true],
        ['0.5E-2 = 0.005', true],
        ['101.5E5 = 10150000', true],
        ['.5 = 0.5', true],
        ['2. = 2', true],
        ["'it''s' = 'it' + '''s'", true],
        ["'' = ''", true],
        ["'日本' LIKE '日_'", true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('functions', () => {
    it.each(
      table([
        ["property('color') = 'red'", true],
        ["p('user.COLOR') = 'red'", true],
        ["p('sys.Label') = 'order.created'", true],
        ["p('my' + ' prop') = 'spaced'", true],
        ['p(missing) IS NULL', true],
        ['newid() IS NOT NULL', true],
        ['newid() <> newid()', true],
      ]),
    )('$sql -> $expected', run);
  });

  describe('F4 evaluation errors (type mismatches and the like)', () => {
    it.each(
      table([
        ["'abc' + 1 = 1", 'throws'],
        // Service Bus does not convert between strings and numbers in comparisons.
        ['color = 1', 'throws'],
        ["Quantity = '10'", 'throws'],
        // C# has no ordering operators on strings or booleans.
        ["color > 'a'", 'throws'],
        ['urgent > false', 'throws'],
        ['urgent = 1', 'throws'],
        ['urgent + 1 = 2', 'throws'],
        ['-color = 1', 'throws'],
        ['Quantity / 0 = 1', 'throws'],
        ['Quantity % 0 = 1', 'throws'],
        ['-9223372036854775808 / -1 = 0', 'throws'],
        ["Quantity LIKE '1%'", 'throws'],
        ['color LIKE 1', 'throws'],
        ["color LIKE 'a' ESCAPE twoChars", 'throws'],
        ["color IN (1, 'red')", 'throws'],
        // A bare property must hold a boolean to be a condition.
        ['color', 'throws'],
        ['p(1) = 1', 'throws'],
        ["p('sys.nope') = 1", 'throws'],
        // AND and OR short-circuit: a decided left side keeps the right from failing.
        ["color = 'red' OR color = 1", true],
        ["color = 'blue' AND color = 1", false],
        ["color = 'red' AND color = 1", 'throws'],
      ]),
    )('$sql -> $expected', run);

    it('evaluateFilter turns an evaluation error into "no match" and hands the error back', () => {
      const outcome = evaluateFilter(compileFilter({ sql: 'color = 1' }), MSG);
      expect(outcome.matched).toBe(false);
      expect(outcome.matched === false && outcome.error).toBeInstanceOf(FilterEvaluationError);
      expect(String(outcome.matched === false && outcome.error?.message)).toMatch(/String and Int64/);
      expect(evaluateFilter(compileFilter({ sql: "color = 'red'" }), MSG)).toEqual({ matched: true });
      expect(evaluateFilter(compileFilter({ sql: "color = 'blue'" }), MSG)).toEqual({ matched: false });
    });
  });
});

describe('F1 SQL filter syntax errors are refused at compile time with a position', () => {
  it.each([
    ['a = 1 b', 1, 7, /^Expected "AND", "OR", end of input, or operator but "b" found at line 1, column 7$/],
    ['color = ', 1, 9, /but end of input found at line 1, column 9$/],
    ["color = 'red' AND", 1, 18, /end of input found/],
    ["color == 'red'", 1, 8, /but "=" found/],
    ["color = 'red", 1, 9, /^Unterminated string constant at line 1, column 9$/],
    ["x = 'it''s", 1, 5, /Unterminated string constant/],
    ['a = 1\nAND b = ', 2, 9, /at line 2, column 9$/],
    ['', 1, 1, /end of input found/],
    ['a = 1;', 1, 6, /but ";" found/],
    ['a IN ()', 1, 7, /but "\)" found/],
    ['EXISTS(1)', 1, 8, /Expected property but "1" found/],
    ['[unclosed = 1', 1, 1, /Unterminated \[delimited identifier\]/],
    ['"unclosed = 1', 1, 1, /Unterminated "quoted identifier"/],
    ['[] = 1', 1, 1, /Expected/],
    ['AND = 1', 1, 1, /but "A" found/],
    ['_a = 1', 1, 1, /but "_" found/],
    ['sys.1 = 2', 1, 5, /Expected property but "1" found/],
    ['sys.nope = 1', 1, 1, /^Unknown system property 'sys.nope' at line 1, column 1$/],
    ['x = 1 AND EXISTS(sys.Lable)', 1, 18, /Unknown system property 'sys.Lable'/],
    ['1 + 2', 1, 1, /Expected a condition but found the value 1 \+ 2/],
    ["color = 'red' AND 'x'", 1, 19, /Expected a condition/],
    ['a = 9223372036854775808', 1, 5, /outside the 64-bit range/],
    ["a LIKE 'x' ESCAPE 'ab'", 1, 19, /single character/],
    ["a LIKE 'x!' ESCAPE '!'", 1, 8, /ends with its escape character/],
    ['x'.repeat(1025), 1, 1025, /at most 1024/],
  ])('%j fails at line %i, column %i', (sql, line, column, message) => {
    let caught: unknown;
    try {
      compileFilter({ sql });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FilterSyntaxError);
    const err = caught as FilterSyntaxError;
    expect(err.position).toMatchObject({ line, column });
    expect(err.message).toMatch(message);
  });

  it.each(['[AND] = 1', '-9223372036854775808 = x', "sys.label LIKE 'a%'", 'x'.repeat(1020) + ' = 1', `${'('.repeat(40)}a = 1${')'.repeat(40)}`])(
    '%j is accepted',
    (sql) => {
      expect(() => compileFilter({ sql })).not.toThrow();
    },
  );

  it('deep nesting up to the length limit is refused or accepted, never a crash', () => {
    const depth = 510;
    const sql = '('.repeat(depth) + 'a' + ')'.repeat(depth) + '=1';
    expect(sql.length).toBeLessThanOrEqual(1024);
    expect(compileFilter({ sql }).evaluate({ system: {}, properties: { a: 1 } })).toBe(true);
    const nots = 'NOT '.repeat(250) + 'a = 1';
    expect(compileFilter({ sql: nots }).evaluate({ system: {}, properties: { a: 1 } })).toBe(true);
  });
});

describe('F1 SQL rule actions', () => {
  const apply = (sql: string, msg: FilterMessage = MSG) => compileAction({ sql }).apply(msg);

  it.each<[sql: string, check: (out: FilterMessage) => void]>([
    ["SET color = 'blue'", (o) => expect(o.properties.color).toBe('blue')],
    // SET on an existing name keeps that property's spelling.
    ["SET COLOR = 'blue'", (o) => expect(o.properties).toMatchObject({ color: 'blue' })],
    ["SET COLOR = 'blue'", (o) => expect(o.properties).not.toHaveProperty('COLOR')],
    ['SET newProp = 1', (o) => expect(o.properties.newProp).toBe(1)],
    ['SET half = Quantity / 4', (o) => expect(o.properties.half).toBe(2)],
    ['SET q = Quantity * 1.5', (o) => expect(o.properties.q).toBe(15)],
    ["SET [with space] = 'x'", (o) => expect(o.properties['with space']).toBe('x')],
    ['SET user.flag = NOT_A_PROP', (o) => expect(o.properties.flag).toBeNull()],
    ['SET flag = TRUE', (o) => expect(o.properties.flag).toBe(true)],
    ['REMOVE color', (o) => expect(o.properties).not.toHaveProperty('color')],
    ['REMOVE Color', (o) => expect(o.properties).not.toHaveProperty('color')],
    ['REMOVE missing', (o) => expect(o.properties).toEqual(MSG.properties)],
    ["SET sys.label = 'relabelled'", (o) => expect(o.system.subject).toBe('relabelled')],
    ["SET sys.Subject = sys.Subject + '.v2'", (o) => expect(o.system.subject).toBe('order.created.v2')],
    ['SET sys.To = sys.ReplyTo', (o) => expect(o.system.to).toBe('replies')],
    ["SET sys.ReplyTo = 'elsewhere'", (o) => expect(o.system.replyTo).toBe('elsewhere')],
    ["SET sys.ReplyToSessionId = 'rs-2'", (o) => expect(o.system.replyToSessionId).toBe('rs-2')],
    ["SET sys.ContentType = 'text/plain'", (o) => expect(o.system.contentType).toBe('text/plain')],
    ['SET sys.ContentType = NULL', (o) => expect(o.system).not.toHaveProperty('contentType')],
    ['REMOVE sys.CorrelationId', (o) => expect(o.system).not.toHaveProperty('correlationId')],
    // Statements run in order and see earlier ones.
    ['SET a = 1; SET b = a + 1', (o) => expect(o.properties).toMatchObject({ a: 1, b: 2 })],
    ['SET a = 1 SET b = 2', (o) => expect(o.properties).toMatchObject({ a: 1, b: 2 })],
    ['set a = 1;remove a;', (o) => expect(o.properties).not.toHaveProperty('a')],
    // The example from the Service Bus documentation.
    [
      "SET quantity = quantity / 2; REMOVE priority;SET sys.CorrelationId = 'low';",
      (o) => {
        expect(o.properties.Quantity).toBe(5);
        expect(o.system.correlationId).toBe('low');
      },
    ],
    ["SET sys.label = 'x'", (o) => expect(o.properties).toEqual(MSG.properties)],
  ])('%s', (sql, check) => {
    check(apply(sql));
  });

  it('never changes its input', () => {
    const input = structuredClone(MSG);
    const frozen = deepFreeze(structuredClone(MSG));
    const out = apply("SET color = 'x'; REMOVE Quantity; SET sys.To = 'y'; REMOVE sys.ReplyTo", frozen);
    expect(frozen).toEqual(input);
    expect(out).not.toBe(frozen);
    expect(out.properties).toMatchObject({ color: 'x' });
  });

  it('keeps a property called __proto__ as an ordinary property', () => {
    const msg: FilterMessage = { system: {}, properties: JSON.parse('{"__proto__": "p"}') };
    const out = apply("SET x = [__proto__] + '!'", msg);
    expect(Object.getPrototypeOf(out.properties)).toBe(Object.prototype);
    expect(Object.entries(out.properties)).toEqual([
      ['__proto__', 'p'],
      ['x', 'p!'],
    ]);
  });

  it('stops a string from growing without bound (4^32-fold here) with FilterEvaluationError', () => {
    const sql = Array.from({ length: 32 }, () => 'SET s = s + s + s + s').join('; ');
    const msg: FilterMessage = { system: {}, properties: { s: 'x' } };
    expect(() => apply(sql, msg)).toThrow(/String result longer than 1048576 characters/);
  });

  it.each(['SET sys.To = 1', 'SET x = 1.0 / 0', "SET x = 'a' + 1", 'SET x = Quantity / 0'])('%s fails per message with FilterEvaluationError', (sql) => {
    expect(() => apply(sql)).toThrow(FilterEvaluationError);
  });

  it.each([
    ["SET sys.MessageId = 'x'", 1, 5, /System property 'sys.MessageId' cannot be changed by a rule action/],
    ['SET sys.SequenceNumber = 1', 1, 5, /cannot be changed/],
    ['REMOVE sys.Size', 1, 8, /cannot be changed/],
    ["SET sys.SessionId = 's'", 1, 5, /cannot be changed/],
    ["SET sys.PartitionKey = 'p'", 1, 5, /cannot be changed/],
    ['SET sys.nope = 1', 1, 5, /Unknown system property 'sys.nope'/],
    ['SET a = sys.nope', 1, 9, /Unknown system property/],
    ['SET a = ', 1, 9, /end of input found/],
    ['SET a = 1;;', 1, 11, /but ";" found/],
    ['DELETE a', 1, 1, /Expected "REMOVE" or "SET"/],
    ['', 1, 1, /end of input found/],
    ["SET a = 1 WHERE color = 'red'", 1, 11, /found/],
    ["SET a LIKE 'x'", 1, 7, /but "L" found/],
  ])('%j is refused at line %i, column %i', (sql, line, column, message) => {
    let caught: unknown;
    try {
      compileAction({ sql });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FilterSyntaxError);
    expect((caught as FilterSyntaxError).position).toMatchObject({ line, column });
    expect((caught as FilterSyntaxError).message).toMatch(message);
  });

  it('refuses a 33rd statement (Service Bus allows 32 per action), pointing at it', () => {
    const sql = Array.from({ length: 33 }, (_, i) => `SET a${i} = ${i}`).join(';');
    expect(() => compileAction({ sql })).toThrow(FilterSyntaxError);
    expect(() => compileAction({ sql })).toThrow(/at most 32 statements/);
    try {
      compileAction({ sql });
    } catch (err) {
      expect((err as FilterSyntaxError).position.offset).toBe(sql.indexOf('SET a32'));
    }
  });

  it('accepts 32 statements', () => {
    const sql = Array.from({ length: 32 }, (_, i) => `SET a${i} = ${i}`).join(';');
    expect(Object.keys(compileAction({ sql }).apply({ system: {}, properties: {} }).properties)).toHaveLength(32);
  });
});

describe('F1 correlation, true and false filters', () => {
  it.each<[CorrelationFilterSpec, boolean]>([
    [{ correlationId: 'c-1' }, true],
    [{ correlationId: 'C-1' }, false],
    [{ subject: 'order.created', to: 'orders' }, true],
    [{ subject: 'order.created', to: 'elsewhere' }, false],
    [{ messageId: 'm-1', replyTo: 'replies', replyToSessionId: 'rs-1', sessionId: 's-1' }, true],
    [{ contentType: 'application/json' }, true],
    [{ properties: { color: 'red', Quantity: 10 } }, true],
    [{ properties: { price: 2.5, urgent: true } }, true],
    // Names are case-insensitive, as in SQL filters.
    [{ properties: { COLOR: 'red' } }, true],
    // Values match only when of the same kind.
    [{ properties: { Quantity: '10' } }, false],
    [{ properties: { color: 'Red' } }, false],
    [{ properties: { missing: 'x' } }, false],
    [{ properties: { nothing: 'x' } }, false],
    [{ messageId: 'm-1', properties: { color: 'blue' } }, false],
  ])('%j -> %s', (correlation, expected) => {
    expect(compileFilter({ correlation }).evaluate(MSG)).toBe(expected);
  });

  it('a missing system property does not match', () => {
    expect(compileFilter({ correlation: { to: 'orders' } }).evaluate(NO_TO)).toBe(false);
  });

  it('true matches everything, false nothing', () => {
    for (const msg of [MSG, NO_TO]) {
      expect(compileFilter({ true: {} }).evaluate(msg)).toBe(true);
      expect(compileFilter({ false: {} }).evaluate(msg)).toBe(false);
    }
  });
});

describe('F1 filter and action bodies (schemas)', () => {
  it.each([
    { sql: "color = 'red'" },
    { correlation: { correlationId: 'x' } },
    { correlation: { properties: { k: 'v', n: 1, b: false } } },
    { true: {} },
    { false: {} },
  ])('accepts %j', (body) => {
    expect(filterSpecSchema.safeParse(body).success).toBe(true);
  });

  it.each([
    {},
    { sql: "color = 'red'", extra: 1 },
    { sql: '' },
    { sql: 'x'.repeat(1025) },
    { sql: 1 },
    { correlation: { label: 'x' } },
    { correlation: {} },
    { correlation: { properties: {} } },
    { correlation: { properties: { k: { nested: 1 } } } },
    { true: { x: 1 } },
    { true: {}, false: {} },
    { false: true },
  ])('refuses %j', (body) => {
    expect(filterSpecSchema.safeParse(body).success).toBe(false);
  });

  it('action bodies are {sql} and nothing else', () => {
    expect(actionSpecSchema.safeParse({ sql: 'SET a = 1' }).success).toBe(true);
    expect(actionSpecSchema.safeParse({ sql: 'SET a = 1', x: 1 }).success).toBe(false);
    expect(actionSpecSchema.safeParse({}).success).toBe(false);
  });
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
