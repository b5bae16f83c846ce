import type { WebSocketRoute } from '../../http/websocket';
import { recordingKeys } from '../calls/recordings';
import { objectKeys } from '../rag/object-keys';

/**
 * The ConversationRelay WebSocket API's routes (docs/api.md, "Two voice pipelines"), part of the
 * route registry (shared/http/registry.ts `websocketRoutes`).
 */
export const relayConnect: WebSocketRoute = {
  kind: 'websocket',
  routeKey: '$connect',
  name: 'relay-connect',
  entry: 'functions/relay/connect.ts',
  description: 'Admits a ConversationRelay connection only with a valid, unused relay token of a live call of a relay agent.',
  // Verifies the token; reads the call, agent, contact and working hours; marks the token used and the call's stream; puts the connection's state.
  access: { table: 'RW', tokens: true },
};

export const relayDefault: WebSocketRoute = {
  kind: 'websocket',
  routeKey: '$default',
  name: 'relay-default',
  entry: 'functions/relay/default.ts',
  description: 'Handles one ConversationRelay message: a prompt runs a turn of the chat engine and the reply goes back as text tokens.',
  // The engine: the model, knowledge-base passages, webhook tools (sealed secrets), built-ins
  // (appointments); the carrier for a transfer; replies through the WebSocket API's management endpoint.
  access: { table: 'RW', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, llm: true, secrets: true, telephony: true },
  timeoutSeconds: 29,
  memoryMb: 512,
};

export const relayDisconnect: WebSocketRoute = {
  kind: 'websocket',
  routeKey: '$disconnect',
  name: 'relay-disconnect',
  entry: 'functions/relay/disconnect.ts',
  description: 'Ends a ConversationRelay connection: its conversation is written to the call (an inbound call ends), its state removed.',
  // The call's end (inbound) goes through the calls service: call.ended, analysis, a campaign's outcome.
  access: { table: 'RW', bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch'] },
  timeoutSeconds: 30,
};
