/** The PagedAsyncIterableIterator of @azure/core-paging, over a function that fetches one page. */

/** Where `byPage()` starts and how many items each page holds. */
export interface PageSettings {
  /**
   * The token that keeps track of where to continue the iterator
   */
  continuationToken?: string;
  /**
   * The size of the page during paged iteration
   */
  maxPageSize?: number;
}

/**
 * An interface that allows async iterable iteration both to completion and by page.
 */
export interface PagedAsyncIterableIterator<TElement, TPage = TElement[], TPageSettings = PageSettings> {
  /**
   * The next item, fetching the next page when this one is used up (the iteration protocol).
   *
   * @returns The next item, or `done` after the last page.
   */
  next(): Promise<IteratorResult<TElement>>;
  /**
   * The iterator itself, so that `for await (const item of iterator)` works.
   *
   * @returns This iterator.
   */
  [Symbol.asyncIterator](): PagedAsyncIterableIterator<TElement, TPage, TPageSettings>;
  /**
   * Return an AsyncIterableIterator that works a page at a time
   */
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
