import { ManualClock } from './table.js';

/** A ManualClock that runs a hook while a long poll sleeps: the world changing meanwhile (a message arriving, an entity deleted). */
export class HookedClock extends ManualClock {
  onSleep: (() => Promise<void>) | undefined;
  override async sleep(ms: number): Promise<void> {
    await super.sleep(ms);
    const hook = this.onSleep;
    if (hook) {
      this.onSleep = undefined;
      await hook();
    }
  }
}
