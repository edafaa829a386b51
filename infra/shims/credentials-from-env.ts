/**
 * Stands in for `@aws-sdk/credential-provider-node` in the Lambda bundles. Lambda always
 * hands a function its credentials in the environment, so the default chain's SSO, STS and
 * instance-metadata clients are dead weight (about 130 KB minified).
 */
export { fromEnv as defaultProvider } from '@aws-sdk/credential-provider-env';
