/** Everything an async iterable yields (the SDKs' `list*` iterators), in order. */
export async function all<T>(iter: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iter) out.push(x);
  return out;
}
