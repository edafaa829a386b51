/**
 * The local runtime's jobs: the sweeper and the reaper on timers standing in for their
 * EventBridge schedules, and the stream poller's drain, each runnable on demand
 * (`/_local/jobs/{name}`, `runJob`). A job never runs twice at once, as Lambda guarantees
 * per schedule; a run asked for meanwhile waits its turn.
 */
import type { JobHandler } from '../../functions/sweeper/handler.js';
import type { LocalLogger } from './logger.js';
import { Serial } from './serial.js';
import type { StreamPoller } from './stream-poller.js';

export type JobName = 'sweeper' | 'reaper' | 'streams';
export const jobNames: readonly JobName[] = ['sweeper', 'reaper', 'streams'];

type ScheduledJob = Exclude<JobName, 'streams'>;

export class LocalJobs {
  private stopping = false;
  private readonly serials: Record<ScheduledJob, Serial> = { sweeper: new Serial(), reaper: new Serial() };

  constructor(
    private readonly handlers: Record<ScheduledJob, JobHandler>,
    private readonly poller: Pick<StreamPoller, 'drain'>,
    private readonly logger: LocalLogger,
  ) {}

  /** Runs a job once to completion (after any run of it in progress) and returns its report. */
  async run(name: JobName): Promise<Record<string, unknown>> {
    if (this.stopping) throw new Error('the local runtime is stopping');
    if (name === 'streams') {
      const report = await this.poller.drain();
      return { ...report };
    }
    if (name !== 'sweeper' && name !== 'reaper') throw new RangeError(`unknown job ${String(name)}`);
    const job = this.handlers[name];
    const result = await this.serials[name].run(() => job());
    return result && typeof result === 'object' ? result : { result };
  }

  /**
   * EventBridge's schedules: the sweeper and the reaper every `intervalMs`. A tick while the
   * job is still busy is skipped. Returns what stops the timers.
   */
  schedule(intervalMs: number): () => void {
    const timers = (['sweeper', 'reaper'] as const).map((name) =>
      setInterval(() => {
        if (this.stopping || this.serials[name].pending > 0) return;
        this.run(name).catch((error) => {
          if (!this.stopping) this.logger.error(`${name} failed`, error);
        });
      }, intervalMs),
    );
    return () => timers.forEach((timer) => clearInterval(timer));
  }

  /** From now on no job starts (`run` throws), and a failure of one still running is not logged. */
  refuseNew(): void {
    this.stopping = true;
  }

  /** Resolves once the sweeper and reaper runs started so far have settled. */
  async idle(): Promise<void> {
    await this.serials.sweeper.idle();
    await this.serials.reaper.idle();
  }
}
