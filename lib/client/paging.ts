/** @azure/core-paging's PagedAsyncIterableIterator, over a function that fetches one page. */

export interface PageSettings {
  continuationToken?: string;
  maxPageSize?: number;
}

export interface PagedAsyncIterableIterator<TElement, TPage = TElement[], TPageSettings = PageSettings> {
  next(): Promise<IteratorResult<TElement>>;
  [Symbol.asyncIterator](): PagedAsyncIterableIterator<TElement, TPage, TPageSettings>;
  byPage: (settings?: TPageSettings) => AsyncIterableIterator<TPage>;
}

/** A page: the items, and the token for the next page (undefined after the last one). */
export type FetchPage<T, TPage extends T[]> = (settings: PageSettings) => Promise<TPage & { continuationToken?: string }>;

export function pagedIterator<T, TPage extends T[] & { continuationToken?: string }>(
  fetchPage: (settings: PageSettings) => Promise<TPage>,
): PagedAsyncIterableIterator<T, TPage> {
  async function* pages(settings: PageSettings = {}): AsyncIterableIterator<TPage> {
    let token = settings.continuationToken;
    do {
      const page = await fetchPage({ ...(token ? { continuationToken: token } : {}), ...(settings.maxPageSize ? { maxPageSize: settings.maxPageSize } : {}) });
      yield page;
      token = page.continuationToken;
    } while (token);
  }
  async function* items(): AsyncIterableIterator<T> {
    for await (const page of pages()) yield* page;
  }
  const all = items();
  const iterator: PagedAsyncIterableIterator<T, TPage> = {
    next: () => all.next(),
    [Symbol.asyncIterator]: () => iterator,
    byPage: (settings?: PageSettings) => pages(settings),
  };
  return iterator;
}
