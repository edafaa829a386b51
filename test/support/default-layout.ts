/**
 * The layout a test's entities get when the test does not choose one: the deployment's default
 * (lib/deps.ts `DEFAULT_NEW_ENTITY_LAYOUT`, ticketed positions) unless
 * `SLUICE_TEST_NEW_ENTITY_LAYOUT` names another. Set, it lets the whole suite run as a
 * deployment whose new queues default to that layout (design.md, "Tickets as the
 * default: what the suite says"); vitest.config.ts passes it on as SLUICE_NEW_ENTITY_LAYOUT, so
 * the local runtime and the Lambda bundles the tests start read it too. Tests that set
 * `newEntityLayout` themselves keep theirs.
 */
import { isNewEntityLayout, type Deps, type NewEntityLayout } from '../../lib/deps.js';
import { POSITIONED_PASS_EVERY_MINUTES } from '../../lib/broker/positioned-expiry.js';

export const TEST_NEW_ENTITY_LAYOUT_ENV = 'SLUICE_TEST_NEW_ENTITY_LAYOUT';

export function testNewEntityLayout(env: NodeJS.ProcessEnv = process.env): NewEntityLayout | undefined {
  const text = env[TEST_NEW_ENTITY_LAYOUT_ENV];
  if (!text) return undefined;
  if (isNewEntityLayout(text)) return text;
  throw new Error(`${TEST_NEW_ENTITY_LAYOUT_ENV} must be empty or a layout lib/deps.ts NEW_ENTITY_LAYOUTS names, not '${text}'`);
}

/** To spread into a test's `Deps`: nothing when the variable is unset. */
export function testLayoutDeps(env: NodeJS.ProcessEnv = process.env): Pick<Deps, 'newEntityLayout'> {
  const layout = testNewEntityLayout(env);
  return layout ? { newEntityLayout: layout } : {};
}

export const indexLayout = { newEntityLayout: 'index' } as const satisfies Pick<Deps, 'newEntityLayout'>;

/**
 * A moment at or after `at` in the first minute of a quarter hour, when a sweeper run also
 * makes the pass over positioned queues (lib/broker/positioned-expiry.ts `positionedPassDue`):
 * what a test of T7 on a ticketed queue moves the clock to before it sweeps.
 */
export const nextPositionedPass = (at: number) => {
  const quarter = POSITIONED_PASS_EVERY_MINUTES * 60_000;
  return Math.ceil(at / quarter) * quarter + 5_000;
};
