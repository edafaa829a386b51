/**
 * Runs tasks one after another, in call order: the local runtime's way of making sure a
 * job (or the stream consumer) never runs twice at once, as Lambda guarantees per
 * schedule and per shard.
 */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();
  private count = 0;

  /** Tasks queued or running. */
  get pending(): number {
    return this.count;
  }

  run<T>(task: () => Promise<T>): Promise<T> {
    this.count++;
    const result = this.tail.then(task);
    this.tail = result.then(
      () => this.count--,
      () => this.count--,
    );
    return result;
  }

  /** Resolves once every task queued so far has settled. */
  async idle(): Promise<void> {
    while (this.count > 0) await this.tail;
  }
}
