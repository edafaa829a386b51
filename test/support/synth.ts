import { App } from 'aws-cdk-lib';

/**
 * The App the in-process infra tests synthesize SluiceStack in: no esbuild bundling (the
 * templates are what they check; app.test.ts bundles for real), and without aws-cdk-lib's
 * built-in CloudFormation validation. That validation loads a WebAssembly rule engine (about
 * 4.5 s per test process) and checks each template (about 1.5 s), and by default only turns
 * its findings into warnings that no test reads; app.test.ts runs it strictly, once, on the
 * template `cdk synth` makes.
 */
export function testApp(context: Record<string, unknown> = {}): App {
  return new App({ context: { 'aws:cdk:bundling-stacks': [], ...context }, builtinCloudFormationValidation: false });
}
