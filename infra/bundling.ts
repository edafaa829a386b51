import { join } from 'node:path';
import { repoRoot } from './paths.js';

/** Module replacements for the Lambda bundles; the CDK construct and `npm run bench` both use them. */
export const bundleAliases: Record<string, string> = {
  '@aws-sdk/credential-provider-node': join(repoRoot, 'infra/shims/credentials-from-env.ts'),
};
