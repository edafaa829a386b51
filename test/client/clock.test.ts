/**
 * The client's own clock (ServiceBusClientOptions.clock), which lock renewal (N4) times itself
 * by: the system's by default.
 */
import { describe, expect, it } from 'vitest';
import { systemClientClock } from '../../lib/client/clock.js';

describe('systemClientClock', () => {
  it('N4: runs a timer once its time has passed in real time, and not once cancelled', async () => {
    const ran: string[] = [];
    const before = systemClientClock.now();
    systemClientClock.after(20, () => ran.push(`kept after ${systemClientClock.now() - before} ms`));
    const cancel = systemClientClock.after(20, () => ran.push('cancelled'));
    cancel();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ran).toHaveLength(1);
    expect(Number(/kept after (\d+) ms/.exec(ran[0]!)?.[1])).toBeGreaterThanOrEqual(19);
  });
});
