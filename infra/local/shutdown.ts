import type { LocalLogger } from './logger.js';

/**
 * What the local runtime has started, as the steps that stop it: each part adds its step
 * as it starts, and `run` takes them in reverse, so a part stops before what it depends on
 * (the server before the jobs, the jobs before the DynamoDB clients, those before DynamoDB
 * Local). A step that fails is logged and the rest still run.
 */
export class ShutdownSteps {
  private readonly steps: (() => Promise<void> | void)[] = [];

  constructor(private readonly logger: LocalLogger) {}

  add(step: () => Promise<void> | void): void {
    this.steps.push(step);
  }

  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        this.logger.error('error while stopping', error);
      }
    }
  }
}
