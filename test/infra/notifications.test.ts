/**
 * The WebSocket API for waiting consumers (H1): routes, the MOCK ping, the notify
 * function's stream mapping, least-privilege ManageConnections, and the URLs handed to
 * the functions that need them.
 */
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { SluiceStack } from '../../infra/stack.js';
import { testApp } from '../support/synth.js';
import { hintFilterPatterns } from '../../lib/store/stream-filter.js';
import { PONG_BODY } from '../../lib/notifications/protocol.js';

let stack: SluiceStack;
let template: Template;
const id = (c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };
function statementsOfRole(roleOwner: { role?: unknown }): Statement[] {
  const roleId = stack.getLogicalId((roleOwner.role as { node: { defaultChild: never } }).node.defaultChild);
  const policies = Object.values(
    template.findResources('AWS::IAM::Policy') as Record<string, { Properties: { Roles: unknown; PolicyDocument: { Statement: Statement[] } } }>,
  );
  return policies.filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`)).flatMap((p) => p.Properties.PolicyDocument.Statement);
}
const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

beforeAll(() => {
  const app = testApp();
  stack = new SluiceStack(app, 'Test');
  template = Template.fromStack(stack);
});

describe('notifications WebSocket API', () => {
  it('routes on the action field: subscribe and $disconnect to the notify function, no $connect', () => {
    const apiId = id(stack.notifications.api);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'WEBSOCKET', RouteSelectionExpression: '$request.body.action' });
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route', { Properties: { ApiId: { Ref: apiId } } })).map(
      (r) => (r as { Properties: { RouteKey: string } }).Properties.RouteKey,
    );
    expect(routes.sort()).toEqual(['$disconnect', 'ping', 'subscribe']);
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      ApiId: { Ref: apiId },
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([{ 'Fn::GetAtt': [id(stack.notifications.fn), 'Arn'] }])]) }),
    });
    // subscribe answers through its route response.
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { ApiId: { Ref: apiId }, RouteKey: 'subscribe', RouteResponseSelectionExpression: '$default' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { ApiId: { Ref: apiId }, StageName: 'live', AutoDeploy: true });
  });

  it('answers ping from a MOCK integration with a pong: no Lambda per keep-alive', () => {
    const apiId = id(stack.notifications.api);
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', { ApiId: { Ref: apiId }, IntegrationType: 'MOCK' });
    template.hasResourceProperties('AWS::ApiGatewayV2::IntegrationResponse', { ApiId: { Ref: apiId }, ResponseTemplates: { '200': PONG_BODY } });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      ApiId: { Ref: apiId },
      RouteKey: 'ping',
      RouteResponseSelectionExpression: '$default',
      Target: { 'Fn::Join': ['', ['integrations/', { Ref: Match.stringLikeRegexp('PingIntegration') }]] },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::RouteResponse', { ApiId: { Ref: apiId }, RouteResponseKey: '$default' });
    // The catch-all integration response a non-proxy integration should have, beside `/200/`.
    const keys = Object.values(template.findResources('AWS::ApiGatewayV2::IntegrationResponse', { Properties: { ApiId: { Ref: apiId } } })).map(
      (r) => (r as { Properties: { IntegrationResponseKey: string; ResponseTemplates: unknown } }).Properties,
    );
    expect(keys.map((k) => k.IntegrationResponseKey).sort()).toEqual(['$default', '/200/']);
    for (const k of keys) expect(k.ResponseTemplates).toEqual({ '200': PONG_BODY });
  });

  it('throttles the stage: every route and connection together, 100 messages a second and bursts of 200 by default', () => {
    const apiId = id(stack.notifications.api);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      ApiId: { Ref: apiId },
      DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
    });
    const other = new SluiceStack(testApp({ notificationsRateLimit: '5', notificationsBurstLimit: 10 }), 'Other');
    Template.fromStack(other).hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: 'live',
      DefaultRouteSettings: { ThrottlingRateLimit: 5, ThrottlingBurstLimit: 10 },
    });
  });

  it('feeds the notify function from the stream without a batching window, filtered to receivable writes', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: id(stack.notifications.fn) },
      StartingPosition: 'LATEST',
      MaximumBatchingWindowInSeconds: 0,
      MaximumRetryAttempts: 0,
      FilterCriteria: { Filters: hintFilterPatterns.map((p) => ({ Pattern: JSON.stringify(p) })) },
    });
  });

  it("grants ManageConnections on POST @connections of this API's stage only, to the notify function and the sweeper", () => {
    const apiId = id(stack.notifications.api);
    for (const fn of [stack.notifications.fn, stack.workers.sweeper]) {
      const manage = statementsOfRole(fn).filter((s) => actions(s).some((a) => a.startsWith('execute-api:')));
      expect(manage).toHaveLength(1);
      expect(actions(manage[0]!)).toEqual(['execute-api:ManageConnections']);
      const resource = JSON.stringify(manage[0]!.Resource);
      expect(resource).toContain(`{"Ref":"${apiId}"}`);
      expect(resource).toContain('/live/POST/@connections/*');
    }
    for (const fn of [stack.api.fn, stack.workers.stream, stack.workers.reaper, stack.rootKey.fn]) {
      expect(JSON.stringify(statementsOfRole(fn))).not.toContain('execute-api');
    }
  });

  it('tells the api function the WebSocket URL and the posters the callback URL', () => {
    const env = (fn: { node: { defaultChild?: unknown } }) =>
      (template.toJSON().Resources as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>)[id(fn)]!.Properties.Environment
        .Variables;
    expect(JSON.stringify(env(stack.api.fn).NOTIFICATIONS_URL)).toContain('wss://');
    for (const fn of [stack.notifications.fn, stack.workers.sweeper]) expect(JSON.stringify(env(fn).NOTIFICATIONS_ENDPOINT)).toContain('https://');
    expect(env(stack.workers.stream).NOTIFICATIONS_ENDPOINT).toBeUndefined();
  });
});
