/**
 * A4 on AWS: the root key is made at deploy time, inside AWS, by a custom resource;
 * it is never a template value, a resource property, a custom resource attribute or an output.
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { SluiceStack } from '../../infra/stack.js';
import { testApp } from '../support/synth.js';
import { generateKey } from '../../lib/auth/index.js';

function synth(context: Record<string, unknown> = {}) {
  const app = testApp(context);
  const stack = new SluiceStack(app, 'Test');
  return { stack, template: Template.fromStack(stack) };
}

/** Every string in a JSON value, keys included. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  }
  return [];
}

/**
 * What a Sluice key looks like (A4: 256 random bits, base64): 43 base64 characters and `=`,
 * standing on its own (not the middle of a longer base64 text such as an encoded nag reason).
 */
const KEY_LIKE = /(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{43}=(?![A-Za-z0-9+/=])/;

let defaults: ReturnType<typeof synth>;
beforeAll(() => {
  defaults = synth();
});

describe('deploy-time root key (A2, A4)', () => {
  it('recognises a generated key, so the checks below can see one', () => {
    // The regex is the one that has to miss in the template; it must hit a real key.
    for (let i = 0; i < 20; i++) expect(KEY_LIKE.test(`x ${generateKey()} y`)).toBe(true);
  });

  it('creates the root rule through a custom resource backed by the bootstrap function', () => {
    // act
    const { stack, template } = defaults;

    // assess
    template.resourceCountIs('Custom::SluiceRootKey', 1);
    const [resource] = Object.values(template.findResources('Custom::SluiceRootKey')) as Array<{
      Properties: Record<string, unknown>;
      DeletionPolicy: string;
    }>;
    // The service token is the provider framework, which invokes the bootstrap function.
    const providerFn = stack.getLogicalId(stack.rootKey.provider.node.findChild('framework-onEvent').node.defaultChild as CfnFunction);
    const bootstrapFn = stack.getLogicalId(stack.rootKey.fn.node.defaultChild as CfnFunction);
    const tableId = stack.getLogicalId(stack.table.table.node.defaultChild as never);
    const keysId = stack.getLogicalId(stack.table.keysTable.node.defaultChild as never);
    // Nothing but the service token and the table names: no key goes in, none comes out.
    expect(resource!.Properties).toEqual({
      ServiceToken: { 'Fn::GetAtt': [providerFn, 'Arn'] },
      TableName: { Ref: tableId },
      KeysTableName: { Ref: keysId },
    });
    expect(resource!.DeletionPolicy).toBe('Delete');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'framework.onEvent',
      Environment: { Variables: { USER_ON_EVENT_FUNCTION_ARN: { 'Fn::GetAtt': [bootstrapFn, 'Arn'] } } },
    });
    // The bootstrap function cannot run before it may read and write the table.
    const fnResource = template.toJSON().Resources[bootstrapFn] as { DependsOn: string[] };
    const policyId = stack.getLogicalId(
      (stack.rootKey.fn.role as unknown as { node: { findChild(id: string): { node: { defaultChild: never } } } }).node.findChild('DefaultPolicy').node
        .defaultChild,
    );
    expect(fnResource.DependsOn).toContain(policyId);
  });

  it('puts no key anywhere in the template: no key-looking string, no attribute of the custom resource read', () => {
    for (const context of [{}, { alarmEmail: 'ops@example.com', destroyData: true }]) {
      // act
      const { stack, template } = synth(context);

      // assess
      const json = template.toJSON() as { Resources: Record<string, unknown>; Outputs: Record<string, unknown> };
      const keyLike = strings(json).filter((s) => KEY_LIKE.test(s));
      expect(keyLike).toEqual([]);
      expect(JSON.stringify(json)).not.toMatch(/primaryKey|secondaryKey/);
      // Nothing reads the custom resource's Data (Fn::GetAtt on it) anywhere.
      const customId = stack.getLogicalId(stack.rootKey.resource.node.defaultChild as never);
      expect(JSON.stringify(json)).not.toContain(`"Fn::GetAtt":["${customId}"`);
      // Outputs: names and URLs only.
      expect(Object.keys(json.Outputs).sort()).toEqual(['ApiUrl', 'KeysTableName', 'NotificationsUrl', 'TableName']);
      const outputs = strings(json.Outputs);
      expect(outputs.filter((s) => KEY_LIKE.test(s))).toEqual([]);
    }
  });

  it('makes the key inside AWS, not at synthesis: two syntheses give the same template', () => {
    // A key generated while synthesizing would differ between two runs.
    expect(synth().template.toJSON()).toEqual(defaults.template.toJSON());
  });

  it('outputs the table names: the keys table is where operators read the root key', () => {
    // act
    const { stack, template } = defaults;

    // assess
    template.hasOutput('TableName', { Value: { Ref: stack.getLogicalId(stack.table.table.node.defaultChild as never) } });
    template.hasOutput('KeysTableName', { Value: { Ref: stack.getLogicalId(stack.table.keysTable.node.defaultChild as never) } });
  });

  it('starts the functions that read the keys table only after the bootstrap moved older rules into it', () => {
    const { stack, template } = defaults;
    const customId = stack.getLogicalId(stack.rootKey.resource.node.defaultChild as never);
    const resources = template.toJSON().Resources as Record<string, { DependsOn?: string[] }>;
    for (const fn of [stack.api.fn, stack.notifications.fn, stack.workers.reaper]) {
      expect(resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)]!.DependsOn).toContain(customId);
    }
  });
});
