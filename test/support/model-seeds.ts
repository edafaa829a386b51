/**
 * The seeds a model-based test runs with. Each model run of the positioned layout takes 5-20 s
 * on DynamoDB Local, and the whole suite must stay under 10 minutes on 2 cores, so `npm test`
 * runs each model with its first seed; `SLUICE_MODEL_SEEDS=all npm test` (or one file with
 * `npx vitest run`) runs every seed listed, as a change to the code under a model should.
 */
export const modelSeeds = (seeds: readonly number[]): number[] => (process.env.SLUICE_MODEL_SEEDS === 'all' ? [...seeds] : seeds.slice(0, 1));
