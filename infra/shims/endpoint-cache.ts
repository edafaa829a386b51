/**
 * Stands in for `@aws-sdk/endpoint-cache` in the Lambda bundles. DynamoDB's client builds one
 * for endpoint discovery, which is off unless asked for (Sluice never asks), and reads it on
 * every request; the package keeps its entries in mnemonist's LRU cache, which brings
 * obliterator and typed-array helpers along (about 7 KB minified) for at most a few keys.
 *
 * The same class API and behaviour as the package's EndpointCache (test/infra/bundling.test.ts
 * drives both with the same calls): entries expire after their CachePeriodInMinutes, `delete`
 * leaves an empty entry, and past `capacity` keys the least recently read or written goes. A
 * Map keeps insertion order, so moving a key to its end on each read or write keeps the least
 * recently used first.
 */

/** An endpoint as DescribeEndpoints answers it. */
export interface Endpoint {
  Address: string;
  CachePeriodInMinutes: number;
}

export interface EndpointWithExpiry {
  Address: string;
  Expires: number;
}

export class EndpointCache {
  private readonly cache = new Map<string, EndpointWithExpiry[]>();
  private readonly capacity: number;

  constructor(capacity: number) {
    // As mnemonist's LRU cache refuses one it cannot hold anything in.
    if (typeof capacity !== 'number' || !(capacity > 0)) throw new Error('endpoint cache: capacity should be positive number.');
    this.capacity = capacity;
  }

  /** One un-expired endpoint address for `key`, picked at random among them. */
  getEndpoint(key: string): string | undefined {
    const endpoints = this.get(key);
    if (!endpoints || endpoints.length === 0) return undefined;
    return endpoints[Math.floor(Math.random() * endpoints.length)]!.Address;
  }

  /** The un-expired endpoints for `key`; an entry with none left is emptied. */
  get(key: string): EndpointWithExpiry[] | undefined {
    if (!this.has(key)) return undefined;
    const value = this.touch(key);
    if (!value) return undefined;
    const now = Date.now();
    const live = value.filter((endpoint) => now < endpoint.Expires);
    if (live.length === 0) {
      this.delete(key);
      return undefined;
    }
    return live;
  }

  set(key: string, endpoints: Endpoint[]): void {
    const now = Date.now();
    this.store(
      key,
      endpoints.map(({ Address, CachePeriodInMinutes }) => ({ Address, Expires: now + CachePeriodInMinutes * 60 * 1000 })),
    );
  }

  delete(key: string): void {
    this.store(key, []);
  }

  /** Whether `key` holds any endpoint, expired or not (as the package's; `get` filters). */
  has(key: string): boolean {
    const endpoints = this.cache.get(key);
    return !!endpoints && endpoints.length > 0;
  }

  clear(): void {
    this.cache.clear();
  }

  /** Reads `key` and makes it the most recently used. */
  private touch(key: string): EndpointWithExpiry[] | undefined {
    const value = this.cache.get(key);
    if (value === undefined) return undefined;
    this.cache.delete(key);
    this.cache.set(key, value);
    return value;
  }

  /** Writes `key` as the most recently used, dropping the least recently used when full. */
  private store(key: string, value: EndpointWithExpiry[]): void {
    if (!this.cache.delete(key) && this.cache.size >= this.capacity) {
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, value);
  }
}
