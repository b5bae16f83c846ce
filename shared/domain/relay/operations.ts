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
  // Verifies the token and Twilio's signature (the credentials); reads the call, its agent version, contact and working hours; marks the token used and the call's stream; puts the connection's state (and the greeting's turn on the call).
  access: { table: 'RW', tokens: true, telephony: true },
};

export const relayDefault: WebSocketRoute = {
  kind: 'websocket',
  routeKey: '$default',
  name: 'relay-default',
  entry: 'functions/relay/default.ts',
  description: 'Handles one ConversationRelay message: a prompt runs a turn of the chat engine and the reply goes back as text tokens.',
  // The engine: the model, knowledge-base passages, webhook tools (sealed secrets), built-ins
  // (appointments); each turn filed as an item of its own; replies through the WebSocket API's management endpoint.
  // A hand-off dispatches `conversation.handed_off` (event-fanout); an agent ending the call ends it
  // here (call-ending.ts: the calls service queues its analysis, events and a campaign's outcome).
  access: { table: 'RW', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, llm: true, secrets: true, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'] },
  timeoutSeconds: 29,
  memoryMb: 512,
};

export const relayDisconnect: WebSocketRoute = {
  kind: 'websocket',
  routeKey: '$disconnect',
  name: 'relay-disconnect',
  entry: 'functions/relay/disconnect.ts',
  description: 'Ends a ConversationRelay connection: a turn still being written is waited for, the call\'s transcript and tool calls written from the turns, the state removed (best effort, as API Gateway delivers it: the recovery sweep writes what a lost one would have).',
  // Ends no call when Twilio runs the session (its <Connect action> decides: a dropped socket resumes); a socket with no carrier behind
  // it (the local terminal client) is hung up by its close, an inbound call ended here (the calls service: its end's analysis, events and a campaign's outcome queued).
  access: { table: 'RW', bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'] },
  timeoutSeconds: 30,
};
