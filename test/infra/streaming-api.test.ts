/**
 * The streaming REST API (lib/streaming-api.ts) serves the widget's turns and their CORS
 * preflights as it serves the chats' turns, and the functions learn its base URL
 * (STREAMING_API_URL, which the widget's config passes to the script) without a dependency cycle.
 */
import { AwsSolutionsChecks } from 'cdk-nag';
import { operations } from '../../shared/http/registry';
import { functionFor, synth, type FoundResource, type Synthesized } from './synth';

let s: Synthesized;
beforeAll(() => {
  s = synth();
});

/** `METHOD /path` of each REST API method, its path rebuilt from the resources' path parts. */
function restRoutes(): Map<string, FoundResource> {
  const resources = s.resources('AWS::ApiGateway::Resource');
  const pathOf = (ref: unknown): string => {
    const id = (ref as { Ref?: string })?.Ref;
    const resource = id ? resources.find((r) => r.logicalId === id) : undefined;
    return resource ? `${pathOf(resource.Properties.ParentId)}/${resource.Properties.PathPart}` : '';
  };
  return new Map(s.resources('AWS::ApiGateway::Method').map((m) => [`${m.Properties.HttpMethod} ${pathOf(m.Properties.ResourceId)}`, m]));
}

it('serves the widget\'s turns and their preflights on the REST API, each streamed by its own streamHandler function', () => {
  const routes = restRoutes();
  for (const route of [
    'POST /api/v1/widget/{id}/chats/{chat_id}/messages',
    'OPTIONS /api/v1/widget/{id}/chats/{chat_id}/messages',
    'POST /api/v1/widget/{id}/chats/{chat_id}/tool-results',
    'OPTIONS /api/v1/widget/{id}/chats/{chat_id}/tool-results',
    'POST /api/v1/chats/{id}/messages',
  ]) {
    const method = routes.get(route);
    expect({ route, integration: method?.Properties.Integration }).toMatchObject({ route, integration: { Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM' } });
  }
  // Every other widget route stays on the HTTP API only.
  expect([...routes.keys()].filter((r) => r.includes('/widget/')).sort()).toEqual([
    'OPTIONS /api/v1/widget/{id}/chats/{chat_id}/messages',
    'OPTIONS /api/v1/widget/{id}/chats/{chat_id}/tool-results',
    'POST /api/v1/widget/{id}/chats/{chat_id}/messages',
    'POST /api/v1/widget/{id}/chats/{chat_id}/tool-results',
  ]);
  // The preflights' streamed functions are the same code's streamHandler.
  const streamed = s.resources('AWS::Lambda::Function').filter((fn) => fn.Properties.Handler === 'index.streamHandler').map((fn) => String(fn.Properties.Description));
  for (const id of ['preflightWidgetChatMessages', 'preflightWidgetChatToolResults', 'sendWidgetChatMessage', 'submitWidgetChatToolResults']) {
    const op = operations.find((o) => o.operationId === id)!;
    expect(streamed.filter((d) => d.startsWith(`${op.method} ${op.path} (streamed): `))).toHaveLength(1);
  }
});

it('serves every /openai/v1 route on the REST API, so the SDK\'s one baseURL is StreamingApiUrl + /api/v1/openai/v1', () => {
  const routes = restRoutes();
  const openAi = operations.filter((o) => o.path.startsWith('/api/v1/openai/v1/'));
  expect(openAi.map((o) => `${o.method} ${o.path}`).sort()).toEqual([
    'GET /api/v1/openai/v1/models',
    'GET /api/v1/openai/v1/models/{model}',
    'POST /api/v1/openai/v1/chat/completions',
  ]);
  for (const op of openAi) {
    const route = `${op.method} ${op.path}`;
    expect({ route, integration: routes.get(route)?.Properties.Integration }).toMatchObject({ route, integration: { Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM' } });
  }
  // Still on the HTTP API too (buffered), under the same paths.
  const httpRoutes = s.resources('AWS::ApiGatewayV2::Route').map((r) => String(r.Properties.RouteKey));
  for (const op of openAi) expect(httpRoutes).toContain(`${op.method} ${op.path}`);
  // The stack names the streaming base URL, which the docs give as the SDK's base.
  const outputs = s.parent.toJSON().Outputs as Record<string, { Description?: string }>;
  expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['ApiUrl', 'StreamingApiUrl']));
  expect(outputs.StreamingApiUrl!.Description).toMatch(/openai\/v1/);
});

it('tells the functions the REST API\'s base URL from its id and stage name, not from the stage resource (which would be a cycle)', () => {
  const config = functionFor(s, operations.find((o) => o.operationId === 'getWidgetConfig')!);
  const value = config.Properties.Environment.Variables.STREAMING_API_URL;
  expect(value).toBeDefined();
  // In the area's nested stack: a parameter the parent fills with the REST API's id.
  const text = JSON.stringify(value);
  expect(text).toMatch(/execute-api/);
  expect(text).toMatch(/\/v1"/);
  expect(text).not.toMatch(/Stage|Deployment/);
  const parentValues = JSON.stringify(s.resources('AWS::CloudFormation::Stack').map((n) => n.Properties.Parameters ?? {}));
  expect(parentValues).toMatch(/StreamingApiRestApi[0-9A-F]+"\}/);
});

it('keeps cdk-nag clean', () => {
  const report = new AwsSolutionsChecks(s.app).validateScope(s.stack);
  const errors = report.violations.filter((v) => v.severity === 'error').map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
  expect(errors).toEqual([]);
});
