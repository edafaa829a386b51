import type { Deps } from '../deps.js';
import { SequenceGenerator } from '../store/sequence.js';

/** What every broker operation works with: the injected deps plus per-instance state. */
export interface BrokerContext extends Deps {
  sequences: SequenceGenerator;
}

export const brokerContext = (deps: Deps): BrokerContext => ({ ...deps, sequences: new SequenceGenerator() });

export const randomId = (bytes = 8) => {
  const a = new Uint8Array(bytes);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
};
