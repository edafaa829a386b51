/**
 * Process-local sharing of one call between concurrent callers: the promise of a call for a
 * key stays in a Map, so a caller that asks for the same key while it is there joins that call
 * instead of making its own (one read or write answers them all). What the Map holds and for
 * how long is each caller's business: a job's or a request's memo keeps every answer
 * ('always'), a cache's reads in flight go when they settle ('untilSettled').
 */

/**
 * The promise `promises` holds for `key`, or else `start()`'s, put there. 'untilSettled': it
 * is taken out when it settles, before its callers resume, unless something else took its place.
 */
export function sharedPromise<K, V>(promises: Map<K, Promise<V>>, key: K, start: () => Promise<V>, hold: 'always' | 'untilSettled'): Promise<V> {
  const running = promises.get(key);
  if (running) return running;
  const started = start();
  promises.set(key, started);
  if (hold === 'untilSettled') {
    const done = () => {
      if (promises.get(key) === started) promises.delete(key);
    };
    started.then(done, done);
  }
  return started;
}
