import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape } from '../common/schemas';
import { lazy } from '../common/lazy';

export const WIDGET_POSITIONS = ['bottom-right', 'bottom-left'] as const;
const MAX_ORIGINS = 50;
/** At most this many names in `public_variables`. */
export const MAX_PUBLIC_VARIABLES = 20;
/** Visitor messages a widget takes per UTC day when `daily_message_limit` is not set. */
export const DEFAULT_DAILY_MESSAGE_LIMIT = 2000;
const MAX_DAILY_MESSAGE_LIMIT = 10_000_000;

/**
 * Placeholder names the platform fills itself (docs/api.md, "Variables"): a visitor may never set
 * them, so they cannot be listed in `public_variables`.
 */
export const BUILT_IN_VARIABLES = ['agent_name', 'current_time', 'current_time_local', 'timezone'] as const;

/** Why `name` cannot be a public variable, or undefined when it can. */
export function builtInVariableProblem(name: string): string | undefined {
  if ((BUILT_IN_VARIABLES as readonly string[]).includes(name)) return `${name} is a built-in variable the platform fills; a visitor cannot set it`;
  if (name === 'contact' || name.startsWith('contact.')) return `${name}: contact.* variables come from the chat's contact; a visitor cannot set them`;
  return undefined;
}

/** One name a public widget chat may set in `dynamic_variables`. */
const PublicVariable = /* @__PURE__ */ lazy(() => z.string().check(
  z.minLength(1, 'must not be empty'),
  z.maxLength(100),
  z.regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'must be a variable name (letters, digits, _ . -)'),
  z.superRefine((name, ctx) => {
    const problem = builtInVariableProblem(name);
    if (problem) ctx.issues.push({ code: 'custom', message: `must not be a built-in name (${problem})`, input: name });
  }),
));

const text = (max: number) => z.string().check(z.maxLength(max));

/**
 * True for a bare web origin as browsers send it in `Origin`: http(s), host, optional port,
 * nothing else (no path, not even "/", no query, no credentials). Case is not significant.
 */
export function isOrigin(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.toLowerCase();
}

/** An allowed origin, stored lower-cased so it compares with what browsers send. */
const Origin = /* @__PURE__ */ lazy(() => z.pipe(
  z.string().check(z.maxLength(300), z.refine(isOrigin, 'must be an origin such as https://example.com (scheme, host and optional port; no path)')),
  z.transform((s: string) => s.toLowerCase()),
));

/** Every writable widget-settings field; create requires `name`, PATCH takes any subset. */
export const widgetFields = /* @__PURE__ */ lazy(() => ({
  name: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200)),
  is_active: z.boolean(),
  title: text(100),
  greeting: text(1000),
  placeholder: text(200),
  primary_color: z.string().check(z.regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour such as #1a2b3c')),
  position: z.enum(WIDGET_POSITIONS),
  avatar_url: z.union([z.literal(''), z.url({ protocol: /^https?$/, error: 'must be an http(s) URL or ""' }).check(z.maxLength(2048))]),
  language: z.string().check(z.regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}$/, 'must be a language tag such as en or en-US')),
  allowed_origins: z.array(Origin).check(z.maxLength(MAX_ORIGINS)),
  /** The `dynamic_variables` a visitor's chat may set (never a built-in or `contact.*` name). */
  public_variables: z.array(PublicVariable).check(
    z.maxLength(MAX_PUBLIC_VARIABLES, `must have at most ${MAX_PUBLIC_VARIABLES} names`),
    z.refine((names) => new Set(names).size === names.length, 'must not repeat a name'),
  ),
  /** Visitor messages the widget takes per UTC day (0: no daily limit). */
  daily_message_limit: z.int().check(z.minimum(0), z.maximum(MAX_DAILY_MESSAGE_LIMIT)),
  /** The widget shows a call button: the visitor talks to the agent in the browser (POST /widget/{id}/calls). */
  voice_enabled: z.boolean(),
}));

type Fields = typeof widgetFields;
const optionalFields = /* @__PURE__ */ lazy(() => Object.fromEntries(Object.entries(widgetFields).map(([k, v]) => [k, z.optional(v)])) as {
  [K in keyof Fields]: z.ZodMiniOptional<Fields[K]>;
});

export const CreateWidgetBody = /* @__PURE__ */ named('CreateWidgetSettingsRequest', () => z.strictObject({ ...optionalFields, name: widgetFields.name }));
export const UpdateWidgetBody = /* @__PURE__ */ named('UpdateWidgetSettingsRequest', () => z.strictObject(optionalFields));
export const WidgetListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export type CreateWidgetInput = z.output<typeof CreateWidgetBody>;
export type UpdateWidgetInput = z.output<typeof UpdateWidgetBody>;

export const WidgetSettings = /* @__PURE__ */ named('WidgetSettings', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  ...widgetFields,
  allowed_origins: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'How the embeddable web widget looks and which origins may load it');
export type WidgetSettings = z.output<typeof WidgetSettings>;

/**
 * What widget settings are when the create body leaves a field out. docs/api.md lists these:
 * is_active true, title "Chat with us", greeting "Hi! How can I help you today?",
 * placeholder "Type your message...", primary_color "#2563eb", position "bottom-right",
 * avatar_url "" (none), language "en", allowed_origins [] (any origin), public_variables [] (a
 * visitor sets no variable), daily_message_limit 2000. Settings stored before a field existed
 * read as its default (service.ts).
 */
export const widgetDefaults = {
  is_active: true,
  title: 'Chat with us',
  greeting: 'Hi! How can I help you today?',
  placeholder: 'Type your message...',
  primary_color: '#2563eb',
  position: 'bottom-right' as const,
  avatar_url: '',
  language: 'en',
  allowed_origins: [] as string[],
  public_variables: [] as string[],
  daily_message_limit: DEFAULT_DAILY_MESSAGE_LIMIT,
  voice_enabled: false,
};

/** What the embeddable widget needs: its appearance and the agent it talks to. */
export const WidgetConfig = /* @__PURE__ */ named('WidgetConfig', () => z.object({
  id: z.string(),
  title: widgetFields.title,
  greeting: widgetFields.greeting,
  placeholder: widgetFields.placeholder,
  primary_color: widgetFields.primary_color,
  position: widgetFields.position,
  avatar_url: widgetFields.avatar_url,
  language: widgetFields.language,
  /** Show the call button (a web call with the agent, POST /widget/{id}/calls). */
  voice_enabled: z.boolean(),
  /** Where the script sends its turns to have them stream (deployed: the streaming REST API); null: the same base as this config. */
  stream_base_url: z.nullable(z.string()),
  agent: z.nullable(
    z.object({
      id: z.string(),
      agent_name: z.string(),
      begin_message: z.string(),
      start_speaker: z.enum(['agent', 'user']),
    }),
  ),
}), 'What the embeddable widget needs (public): its appearance and the agent it talks to');
export type WidgetConfig = z.output<typeof WidgetConfig>;
