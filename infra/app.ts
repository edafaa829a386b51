import { App, Tags } from 'aws-cdk-lib';
import { SluiceStack } from './stack.js';

// `cdk synth` / `cdk deploy` run this file (cdk.json: `npx tsx infra/app.ts`).
// `-c stackName=...` deploys a second, independent copy next to the first.
const app = new App();
const contextName: unknown = app.node.tryGetContext('stackName');
const stackName = typeof contextName === 'string' && contextName !== '' ? contextName : 'Sluice';

// The construct id is the stack name too, so `cdk deploy <stackName>` selects it.
new SluiceStack(app, stackName, { stackName });
Tags.of(app).add('app', 'sluice');

app.synth();
