import * as z from 'zod/mini';
import { AgentVersionPin } from '../agents/schemas';
import { lazy } from '../common/lazy';
import { named } from '../common/named';
import { DynamicVariables, uuid } from '../common/schemas';
import { Call } from './schemas';

/** Web calls' request and answers (web-calls.ts has their code): what operation modules import. */
export const CreateWebCallBody = /* @__PURE__ */ named('CreateWebCallRequest', () => z.strictObject({
  agent_id: uuid(),
  contact_id: z.optional(uuid()),
  /** Filled into the agent's `{{name}}` placeholders (begin message, prompt). */
  dynamic_variables: z.optional(DynamicVariables),
  /** A published version (1, 2, …) or "draft"; default the agent's published_version, else the draft. */
  agent_version: z.optional(AgentVersionPin),
}), 'A call in the browser to start with an agent');
export type CreateWebCallInput = z.output<typeof CreateWebCallBody>;

const admission = /* @__PURE__ */ lazy(() => ({
  /** The voice runtime's WebSocket for browsers (`wss://…/web`): connect, then send `start` with the token. */
  url: z.string(),
  /** One use, valid 60 s: the `start` message's `token`. */
  token: z.string(),
  token_expires_at: z.string(),
}));

export const WebCallStarted = /* @__PURE__ */ named('WebCallStarted', () => z.object({ call: Call, ...admission }), 'A web call created, with where and how the browser joins it');
export type WebCallStarted = z.output<typeof WebCallStarted>;

/** What a widget's page learns of the call it starts (no organization data). */
export const WidgetCallStarted = /* @__PURE__ */ named('WidgetCallStarted', () => z.object({ call_id: z.string(), agent_id: z.string(), ...admission }), 'A web call started through a widget, with where and how the browser joins it');
export type WidgetCallStarted = z.output<typeof WidgetCallStarted>;

