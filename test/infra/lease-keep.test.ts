/**
 * R6 on positions: a taken-back lease is remembered in its cursor for `TAKEN_BACK_KEEP_MS`,
 * on the ground that no write of a lease can land later than the longest function timeout
 * after its take-back (lib/store/leases.ts). This holds only while every function of the
 * synthesized template times out well within that time; raising a timeout without it would
 * let a late lease write bring back a lease already taken back.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { SluiceStack } from '../../infra/stack.js';
import { TAKEN_BACK_KEEP_MS } from '../../lib/store/leases.js';
import { testApp } from '../support/synth.js';

type TemplateJson = { Resources: Record<string, { Type: string; Properties: { Timeout?: number } }> };

describe('how long a cursor keeps its take-backs (R6)', () => {
  it("outlasts twice the longest timeout of Sluice's functions", () => {
    const stack = new SluiceStack(testApp(), 'Test');
    const template = Template.fromStack(stack).toJSON() as TemplateJson;
    // Sluice's handlers only: CDK's own provider functions write no lease.
    const timeouts = Object.values(stack.functions).map((fn) => template.Resources[stack.getLogicalId(fn.node.defaultChild as never)]!.Properties.Timeout ?? 3);
    expect(timeouts.length).toBe(Object.keys(stack.functions).length);
    expect(2 * Math.max(...timeouts) * 1000).toBeLessThanOrEqual(TAKEN_BACK_KEEP_MS);
  });
});
