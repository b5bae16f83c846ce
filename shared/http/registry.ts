import type { Operation } from './operation';
import * as health from '../domain/health/operations';
import * as apiKeys from '../domain/api-keys/operations';
import * as agents from '../domain/agents/operations';
import * as tools from '../domain/tools/operations';
import * as widgets from '../domain/widgets/operations';
import * as contacts from '../domain/contacts/operations';
import * as appointments from '../domain/appointments/operations';
import * as rag from '../domain/rag/operations';
import * as phoneNumbers from '../domain/phone-numbers/operations';
import * as billing from '../domain/billing/operations';
import * as calls from '../domain/calls/operations';
import * as webCalls from '../domain/calls/web-call-operations';
import * as concurrency from '../domain/concurrency/operations';
import * as chats from '../domain/chats/operations';
import * as dnc from '../domain/dnc/operations';
import * as campaigns from '../domain/campaigns/operations';
import * as webhooks from '../domain/webhooks/operations';
import * as events from '../domain/events/operations';
import * as analytics from '../domain/analytics/operations';
import * as relay from '../domain/relay/operations';
import * as relayHttp from '../domain/relay/action-operations';
import * as transfers from '../domain/calls/transfer-operations';
import * as openAiCompat from '../domain/openai-compat/operations';
import type { WebSocketRoute } from './websocket';

/**
 * The route registry: every operation of the API, once. The CDK stack, the local runtime,
 * the OpenAPI document and the registry test all read this list. Entry files import only
 * their own area's operation, never this module, so a bundle holds one area's schemas.
 */
export const operations: Operation[] = [
  ...Object.values(health),
  ...Object.values(apiKeys),
  ...Object.values(agents),
  ...Object.values(tools),
  ...Object.values(widgets),
  ...Object.values(contacts),
  ...Object.values(appointments),
  ...Object.values(rag),
  ...Object.values(phoneNumbers),
  ...Object.values(billing),
  ...Object.values(calls),
  ...Object.values(webCalls),
  ...Object.values(concurrency),
  ...Object.values(chats),
  ...Object.values(dnc),
  ...Object.values(campaigns),
  ...Object.values(webhooks),
  ...Object.values(events),
  ...Object.values(analytics),
  ...Object.values(openAiCompat),
  ...Object.values(relayHttp),
  ...Object.values(transfers),
] as Operation[];

/** Handles every request no operation matches: 404, or 405 when the path exists with another method. */
export const fallbackEntry = 'functions/system/fallback.ts';

/** The WebSocket routes (the ConversationRelay API): one function each, in the stack and in the local runtime. */
export const websocketRoutes: WebSocketRoute[] = Object.values(relay);
