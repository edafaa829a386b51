/**
 * Stands in for `@aws/lambda-invoke-store` in the Lambda bundles (about 2 KB minified). Its
 * one user there is the AWS SDK's recursion-detection middleware, which asks for the store
 * and reads the invocation's trace ids from it (`getXRayTraceId`, `getTraceparent`, ...),
 * falling back to the `_X_AMZN_TRACE_ID` variable when the store has none.
 *
 * The package answers the store the Lambda runtime publishes at `globalThis.awslambda.InvokeStore`
 * when there is one; otherwise it makes an empty store of its own, which holds no context
 * (nothing in a Sluice function runs invocations through it), so every trace id it gives is
 * undefined. This stand-in answers the runtime's store, or nothing: the middleware sets the
 * same headers either way (test/infra/bundling.test.ts drives both).
 */

interface RuntimeStore {
  getXRayTraceId(): string | undefined;
}

export const InvokeStore = {
  getInstanceAsync: async (): Promise<RuntimeStore | undefined> => (globalThis as { awslambda?: { InvokeStore?: RuntimeStore } }).awslambda?.InvokeStore,
};
