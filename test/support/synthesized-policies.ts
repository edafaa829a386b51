/**
 * The synthesized stack's IAM, as the grant tests check recorded calls against it: the
 * statements of each function's role, and the tables' logical ids mapped to the names a local
 * run gave the tables.
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { LocalHandlers } from '../../infra/local/runtime.js';
import { SluiceStack } from '../../infra/stack.js';
import { roleStatements, type Statement } from './iam-policy.js';
import { testApp } from './synth.js';

export type FunctionName = keyof LocalHandlers | 'bootstrap';

/** The synthesized policy of each function's role, and the tables' logical ids mapped to `names`. */
export function synthesizedPolicies(names: { data: string; keys: string } = { data: 'data', keys: 'keys' }) {
  const app = testApp();
  const stack = new SluiceStack(app, 'Test');
  const template = Template.fromStack(stack).toJSON() as Parameters<typeof roleStatements>[0];
  const fns = stack.functions;
  const statements = Object.fromEntries(
    Object.entries(fns).map(([name, fn]) => [name, roleStatements(template, stack.getLogicalId(fn.role!.node.defaultChild as never))]),
  ) as Record<FunctionName, Statement[]>;
  const tables = {
    [stack.getLogicalId(stack.table.table.node.defaultChild as never)]: names.data,
    [stack.getLogicalId(stack.table.keysTable.node.defaultChild as never)]: names.keys,
  };
  return { statements, tables };
}
