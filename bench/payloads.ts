/**
 * The message bodies the whole-life figures are measured with. `jsonEvent(n)` is a
 * realistic event (CloudEvents envelope, an order with line items, address and payment, as
 * a checkout service publishes it) whose JSON text is exactly `bytes` long; its values vary
 * with `n`, so no two events are alike. `incompressibleBody` is what an encrypted payload
 * looks like: a base64 string of random bytes, exactly `bytes` of JSON text.
 */
import { randomBytes } from 'node:crypto';

const streets = ['Calle de Alcalá 123, 4º B', 'Rue de Rivoli 58', 'Kastanienallee 12', 'Via Roma 7, int. 3', '221B Baker Street'];
const cities = [
  ['Madrid', '28009', 'ES', 'es-ES'],
  ['Paris', '75001', 'FR', 'fr-FR'],
  ['Berlin', '10435', 'DE', 'de-DE'],
  ['Milano', '20121', 'IT', 'it-IT'],
  ['London', 'NW1 6XE', 'GB', 'en-GB'],
] as const;
const products = [
  ['Merino wool crew neck sweater', 89.9],
  ['Slim fit chino trousers', 59.5],
  ['Leather low-top sneakers', 129],
  ['Organic cotton t-shirt, 3 pack', 34.95],
  ['Waterproof hiking jacket', 179],
  ['Canvas weekender bag', 74.5],
] as const;
const names = ['María González', 'Jean Dupont', 'Lena Schmidt', 'Giulia Rossi', 'Oliver Smith'];

/** A small deterministic generator (mulberry32), so the figures (and seeded test runs) repeat from run to run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function event(n: number, lineCount: number) {
  const r = seededRandom(n + 1);
  const hex = (length: number) => Array.from({ length }, () => Math.floor(r() * 16).toString(16)).join('');
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const c = pick(cities);
  const items = Array.from({ length: lineCount }, () => {
    const p = pick(products);
    return {
      sku: `SKU-${10000 + Math.floor(r() * 90000)}-${pick(['BLK', 'NVY', 'WHT', 'GRN', 'RED'])}-${pick(['S', 'M', 'L', 'XL'])}`,
      name: p[0],
      quantity: 1 + Math.floor(r() * 3),
      unitPrice: p[1],
    };
  });
  const subtotal = Math.round(items.reduce((s, l) => s + l.quantity * l.unitPrice, 0) * 100) / 100;
  const tax = Math.round(subtotal * 0.21 * 100) / 100;
  return {
    specversion: '1.0',
    type: 'com.example.orders.order.created',
    source: '/services/checkout',
    id: `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`,
    time: new Date(Date.UTC(2026, 10, 23, 7, 44, 23) + Math.floor(r() * 86_400_000)).toISOString(),
    data: {
      orderId: `ORD-2026-${100000 + Math.floor(r() * 900000)}`,
      customerId: `CUS-${String(Math.floor(r() * 10_000_000)).padStart(7, '0')}`,
      email: `customer${Math.floor(r() * 1_000_000)}@example.com`,
      currency: 'EUR',
      locale: c[3],
      items,
      subtotal,
      shipping: 4.95,
      tax,
      total: Math.round((subtotal + 4.95 + tax) * 100) / 100,
      shippingAddress: { name: pick(names), line1: pick(streets), city: c[0], postalCode: c[1], country: c[2] },
      payment: {
        method: 'card',
        brand: pick(['visa', 'mastercard', 'amex']),
        last4: String(1000 + Math.floor(r() * 9000)),
        authorizationId: `AUTH-${hex(12)}`,
      },
      traceparent: `00-${hex(32)}-${hex(16)}-01`,
      note: '',
    },
  };
}

const textBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/**
 * A realistic JSON event of exactly `bytes` of JSON text (at least ~1 KB): an order with
 * three line items, and as many more as a larger size holds; a gift note makes up the rest.
 * `n` varies every value.
 */
export function jsonEvent(n: number, bytes = 1024): Record<string, unknown> {
  let lines = 3;
  while (textBytes(event(n, lines + 1)) <= bytes - 20) lines++;
  const e = event(n, lines);
  const short = bytes - textBytes(e);
  if (short < 0) throw new Error(`a JSON event is at least ${bytes - short} bytes`);
  const words = 'Please leave the parcel with the neighbour at number twelve if nobody answers. Happy birthday! ';
  e.data.note = words.repeat(Math.ceil(short / words.length) + 1).slice(0, short);
  return e;
}

/** A base64 string of random bytes whose JSON text (quotes included) is exactly `bytes`. */
export const incompressibleBody = (bytes = 1024): string =>
  randomBytes(bytes)
    .toString('base64')
    .slice(0, bytes - 2);
