/**
 * The deployment's layout choice (`-c newEntityLayout`, infra/config.ts): it reaches every
 * function whose handler reads the layout from its environment, and nothing else in the
 * template changes; without it no function is told any layout, so the default template is
 * today's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';
import { SluiceStack, type SluiceStackProps } from '../../infra/stack.js';
import { NEW_ENTITY_LAYOUT_ENV } from '../../lib/deps.js';
import { testApp } from '../support/synth.js';

type FunctionResource = { Properties: { Environment?: { Variables?: Record<string, unknown> } } };
type TemplateJson = { Resources: Record<string, { Type: string } & FunctionResource> };

function synth(context: Record<string, unknown> = {}, props: SluiceStackProps = {}) {
  const stack = new SluiceStack(testApp(context), 'Test', props);
  return { stack, template: Template.fromStack(stack).toJSON() as TemplateJson };
}

/** Each `functions/<name>` by its function's logical id. */
function functionIds(stack: SluiceStack): Record<string, string> {
  const fns = stack.functions;
  return Object.fromEntries(Object.entries(fns).map(([name, fn]) => [name, stack.getLogicalId(fn.node.defaultChild as never)]));
}

/**
 * The handlers that read the layout from the environment: `depsFromEnv` reads it
 * (`layoutFromEnv`) whatever else the handler needs.
 */
const readers = readdirSync(join(repoRoot, 'functions')).filter((name) =>
  /\b(depsFromEnv|layoutFromEnv)\(/.test(readFileSync(join(repoRoot, 'functions', name, 'handler.ts'), 'utf8')),
);

const layoutOf = (template: TemplateJson, id: string) => template.Resources[id]?.Properties.Environment?.Variables?.[NEW_ENTITY_LAYOUT_ENV];

const lambdas = (template: TemplateJson) =>
  Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function')
    .map(([id]) => id);

describe('the layout new queues get (-c newEntityLayout)', () => {
  it('is told to no function by default, and the template names no layout', () => {
    // act
    const { template } = synth();

    // assess
    expect(lambdas(template).length).toBeGreaterThan(0);
    expect(JSON.stringify(template)).not.toContain(NEW_ENTITY_LAYOUT_ENV);
    // An empty value, as `-c newEntityLayout=` passes it, is the default too.
    expect(synth({ newEntityLayout: '' }).template).toEqual(template);
  });

  it('reaches every function whose handler reads it, and changes nothing else', () => {
    // act
    const { stack, template } = synth({ newEntityLayout: 'positions' });

    // assess: every handler of functions/ is one of the stack's, and all of them read it today.
    const ids = functionIds(stack);
    expect(Object.keys(ids).sort()).toEqual(readdirSync(join(repoRoot, 'functions')).sort());
    expect(readers.sort()).toEqual(Object.keys(ids).sort());
    for (const [name, id] of Object.entries(ids)) expect(layoutOf(template, id), name).toBe(readers.includes(name) ? 'positions' : undefined);
    // No other function (none today) is told it.
    const told = lambdas(template).filter((id) => layoutOf(template, id) !== undefined);
    expect(told.sort()).toEqual(readers.map((name) => ids[name]!).sort());
    // Taking the variable out again gives the default template, byte for byte.
    for (const id of told) delete template.Resources[id]!.Properties.Environment!.Variables![NEW_ENTITY_LAYOUT_ENV];
    expect(JSON.stringify(template)).toBe(JSON.stringify(synth().template));
  });

  it('tickets: -c newEntityLayout=tickets reaches every function as its value', () => {
    const { stack, template } = synth({ newEntityLayout: 'tickets' });
    for (const [name, id] of Object.entries(functionIds(stack))) expect(layoutOf(template, id), name).toBe('tickets');
  });

  it("index: -c newEntityLayout=index names today's layout to every function, as a deployment that keeps it whatever the default", () => {
    const { stack, template } = synth({ newEntityLayout: 'index' });
    for (const [name, id] of Object.entries(functionIds(stack))) expect(layoutOf(template, id), name).toBe('index');
  });

  it('is taken from the stack props over context, as tests set it', () => {
    // act
    const { stack, template } = synth({}, { config: { newEntityLayout: 'positions' } });
    const { template: overridden } = synth({ newEntityLayout: 'positions' }, { config: { newEntityLayout: undefined } });

    // assess
    expect(layoutOf(template, functionIds(stack).api!)).toBe('positions');
    expect(JSON.stringify(overridden)).not.toContain(NEW_ENTITY_LAYOUT_ENV);
  });

  it.each([['position'], ['ready'], ['POSITIONS'], [true]])('refuses %j, naming the key and the accepted value', (value) => {
    expect(() => synth({ newEntityLayout: value })).toThrow(/context newEntityLayout must be index or positions or tickets \(or absent for tickets\), got/);
  });
});
